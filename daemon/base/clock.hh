// The one clock for intervals, deadlines and rates.
#pragma once

#include <chrono>

namespace prewarmd {
using Clock = std::chrono::steady_clock;
}
