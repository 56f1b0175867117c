// `prewarmd config`: check a configuration file, or print the example one.
#pragma once

#include <string>
#include <vector>

namespace prewarmd {
int config_command(const std::vector<std::string>& args);
}
