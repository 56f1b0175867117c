#include "engine/checkpoint.hh"

#include <cerrno>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/atomic_file.hh"
#include "base/json_text.hh"
#include "base/sealed.hh"

namespace prewarmd {
namespace {

Error damaged(const std::string& why) {
    return Error{-EBADMSG, "damaged checkpoint: " + why};
}

} // namespace

std::string format_checkpoint(const Checkpoint& c) {
    nlohmann::json done = nlohmann::json::array();
    for (const auto& e : c.done.extents())
        done.push_back({e.offset, e.length});
    const nlohmann::json body = {
        {"identity", c.identity},
        {"size_bytes", c.size_bytes},
        {"mode", c.mode},
        {"done", done},
        {"written_bytes", c.written_bytes},
        {"read_bytes", c.read_bytes},
        {"skipped_bytes", c.skipped_bytes},
        {"complete", c.complete},
        {"probe", to_json(c.probe)},
    };
    return seal("checkpoint", 1, json_text(body) + "\n");
}

Result<Checkpoint> parse_checkpoint(std::string_view text) {
    auto body = unseal("checkpoint", 1, text);
    if (!body)
        return damaged(body.error().message);

    Checkpoint c;
    try {
        const auto json = nlohmann::json::parse(*body);
        const auto field = [&](const char* key, nlohmann::json::value_t type) -> const auto& {
            const auto& v = json.at(key);
            if (v.type() != type)
                throw std::invalid_argument(std::string(key) + " has the wrong type");
            return v;
        };
        using T = nlohmann::json::value_t;
        c.identity = field("identity", T::string).get<std::string>();
        c.size_bytes = field("size_bytes", T::number_unsigned).get<uint64_t>();
        c.mode = field("mode", T::string).get<std::string>();
        c.written_bytes = field("written_bytes", T::number_unsigned).get<uint64_t>();
        c.read_bytes = field("read_bytes", T::number_unsigned).get<uint64_t>();
        c.skipped_bytes = field("skipped_bytes", T::number_unsigned).get<uint64_t>();
        c.complete = field("complete", T::boolean).get<bool>();
        c.probe = probe_figures_from(json.value("probe", nlohmann::json()));
        for (const auto& range : field("done", T::array)) {
            if (!range.is_array() || range.size() != 2 || !range[0].is_number_unsigned() ||
                !range[1].is_number_unsigned())
                throw std::invalid_argument("a done range is not [offset, length]");
            const auto offset = range[0].get<uint64_t>(), length = range[1].get<uint64_t>();
            if (length == 0 || offset > c.size_bytes || length > c.size_bytes - offset)
                throw std::invalid_argument("a done range lies outside the disk");
            c.done.add(offset, offset + length);
        }
    } catch (const std::exception& e) {
        return damaged(e.what());
    }
    return c;
}

Result<void> checkpoint_fits(const Checkpoint& c, const std::string& identity, uint64_t size_bytes,
                             std::string_view mode) {
    if (c.identity != identity || c.size_bytes != size_bytes)
        return Error{-EINVAL, "the checkpoint belongs to another disk (" + c.identity + "), not " +
                                  identity};
    if (c.mode != mode)
        return Error{-EINVAL, "the checkpoint was made in mode " + c.mode + ", not " +
                                  std::string(mode) +
                                  ": use that mode, or remove the checkpoint to start over"};
    return {};
}

Result<void> save_checkpoint(const std::string& path, const Checkpoint& checkpoint) {
    return write_file_atomically(path, format_checkpoint(checkpoint));
}

Result<std::optional<Checkpoint>> load_checkpoint(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        if (errno == ENOENT)
            return std::optional<Checkpoint>{};
        return errno_error("open checkpoint " + path);
    }
    std::ostringstream text;
    text << in.rdbuf();
    auto parsed = parse_checkpoint(text.str());
    if (!parsed)
        return Error{parsed.error().err, path + ": " + parsed.error().message};
    return std::optional<Checkpoint>(std::move(*parsed));
}

} // namespace prewarmd
