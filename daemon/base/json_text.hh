// JSON text that never throws: a string that is not UTF-8 (a file name may hold any
// bytes) has its bad bytes replaced by U+FFFD instead of failing the whole document.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace prewarmd {

inline std::string json_text(const nlohmann::json& value, int indent = -1) {
    return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace prewarmd
