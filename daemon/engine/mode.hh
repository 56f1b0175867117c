// What a job does to each chunk (docs/engine.md): `zero` writes zeros over backend
// blocks that read all-zero, `rewrite` writes back what it read, `read` only reads.
#pragma once

#include <optional>
#include <string_view>

namespace prewarmd {

enum class Mode { zero, rewrite, read };
std::string_view to_string(Mode mode);
std::optional<Mode> parse_mode(std::string_view text);

// How much of each backend block a job writes (docs/engine.md, sparse warming):
// `full` every byte; `sparse` one small piece per block; `automatic` ("auto")
// sparse where the probe proved a first write warms its whole block.
enum class Strategy { automatic, full, sparse };
std::string_view to_string(Strategy strategy);
std::optional<Strategy> parse_strategy(std::string_view text);

} // namespace prewarmd
