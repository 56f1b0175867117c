#include "base/sealed.hh"

#include <cerrno>
#include <cinttypes>
#include <cstdio>

#include "base/crc32c.hh"

namespace prewarmd {
namespace {

std::string header(std::string_view kind, int version) {
    return "prewarmd-" + std::string(kind) + " " + std::to_string(version) + " crc32c=";
}

std::string hex(uint32_t value) {
    char text[9];
    std::snprintf(text, sizeof text, "%08" PRIx32, value);
    return text;
}

} // namespace

std::string seal(std::string_view kind, int version, std::string_view body) {
    return header(kind, version) + hex(crc32c(body)) + "\n" + std::string(body);
}

Result<std::string> unseal(std::string_view kind, int version, std::string_view text) {
    const auto expected = header(kind, version);
    const auto nl = text.find('\n');
    if (nl == std::string_view::npos || text.substr(0, expected.size()) != expected ||
        nl != expected.size() + 8)
        return Error{-EBADMSG, "no '" + expected + "' header"};
    const auto body = text.substr(nl + 1);
    if (text.substr(expected.size(), 8) != hex(crc32c(body)))
        return Error{-EBADMSG, "checksum mismatch"};
    return std::string(body);
}

} // namespace prewarmd
