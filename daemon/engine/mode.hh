// What a job does to each chunk (docs/engine.md): `zero` writes zeros over backend
// blocks that read all-zero, `rewrite` writes back what it read, `read` only reads.
#pragma once

#include <optional>
#include <string_view>

namespace prewarmd {

enum class Mode { zero, rewrite, read };
std::string_view to_string(Mode mode);
std::optional<Mode> parse_mode(std::string_view text);

} // namespace prewarmd
