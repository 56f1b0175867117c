// `prewarmd inspect [DEVICE...]`: what the daemon would make of each disk.
#pragma once

#include <string>
#include <vector>

namespace prewarmd {
int inspect_command(const std::vector<std::string>& args);
}
