// `prewarmd prefill PATH`: one job in the foreground.
#pragma once

#include <string>
#include <vector>

namespace prewarmd {

int prefill_command(const std::vector<std::string>& args);

} // namespace prewarmd
