// `prewarmd run` (and `prewarmd` alone): the service.
#pragma once

#include <string>
#include <vector>

namespace prewarmd {
int run_command(const std::vector<std::string>& args);
}
