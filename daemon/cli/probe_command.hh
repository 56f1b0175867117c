// `prewarmd probe DEVICE`: what a first write costs, and the backend's granularity;
// `--warm` after a prefill: whether the warming stuck.
#pragma once

#include <string>
#include <vector>

namespace prewarmd {
int probe_command(const std::vector<std::string>& args);
}
