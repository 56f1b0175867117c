#include "events/cloud_event.hh"

#include <sys/random.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <optional>

#include <nlohmann/json.hpp>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "base/json_text.hh"

namespace prewarmd {
namespace {

std::string rfc3339_ms(int64_t unix_ms) {
    const auto t = static_cast<std::time_t>(unix_ms / 1000);
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char text[40];
    const size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
    std::snprintf(text + n, sizeof text - n, ".%03dZ", static_cast<int>(unix_ms % 1000));
    return text;
}

std::string base64(const unsigned char* bytes, size_t size) {
    std::string out(4 * ((size + 2) / 3), '\0');
    const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), bytes,
                                  static_cast<int>(size));
    out.resize(static_cast<size_t>(n));
    return out;
}

// Standard base64 with its padding; std::nullopt for anything else.
std::optional<std::string> unbase64(std::string_view text) {
    if (text.empty() || text.size() % 4 != 0)
        return std::nullopt;
    std::string out(text.size() / 4 * 3, '\0');
    const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                  reinterpret_cast<const unsigned char*>(text.data()),
                                  static_cast<int>(text.size()));
    if (n < 0)
        return std::nullopt;
    // EVP_DecodeBlock counts the padding as zero bytes.
    size_t size = static_cast<size_t>(n);
    for (size_t i = text.size(); i > 0 && text[i - 1] == '='; --i)
        --size;
    out.resize(size);
    return out;
}

} // namespace

std::string event_json(const CloudEvent& event) {
    nlohmann::json out = {
        {"specversion", "1.0"},
        {"id", event.id},
        {"source", event.source},
        {"type", event.type},
        {"subject", event.subject},
        {"time", rfc3339_ms(event.time_unix_ms)},
        {"datacontenttype", "application/json"},
        {"data", nlohmann::json::parse(event.data_json, nullptr, false)},
    };
    return json_text(out);
}

int64_t unix_ms_now() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

Result<std::string> new_event_id() {
    unsigned char b[16];
    if (::getrandom(b, sizeof b, 0) != sizeof b)
        return errno_error("getrandom");
    b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40); // version 4
    b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80); // the RFC 4122 variant
    char text[37];
    std::snprintf(text, sizeof text,
                  "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                  b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                  b[14], b[15]);
    return std::string(text);
}

Result<std::string> webhook_key(std::string_view secret) {
    std::string key;
    if (secret.rfind("whsec_", 0) == 0) {
        auto decoded = unbase64(secret.substr(6));
        if (!decoded)
            return Error{-EINVAL, "after \"whsec_\", the key is standard base64"};
        key = std::move(*decoded);
    } else {
        key = std::string(secret);
    }
    if (key.size() < 16)
        return Error{-EINVAL, "the key is " + std::to_string(key.size()) +
                                  " bytes long: 16 at least (Standard Webhooks advises 24 to 64)"};
    return key;
}

std::string webhook_signature(std::string_view key, std::string_view id, int64_t timestamp,
                              std::string_view body) {
    const std::string signed_text =
        std::string(id) + "." + std::to_string(timestamp) + "." + std::string(body);
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
         reinterpret_cast<const unsigned char*>(signed_text.data()), signed_text.size(), mac,
         &size);
    return "v1," + base64(mac, size);
}

} // namespace prewarmd
