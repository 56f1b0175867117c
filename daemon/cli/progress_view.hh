// Progress snapshots as text: the bar and line of a terminal, the plain periodic
// line of a log, the summary at the end. prewarmctl renders the same snapshot.
#pragma once

#include <chrono>
#include <string>

#include "engine/progress.hh"

namespace prewarmd {

// "42.0%  1.68 GiB of 4.00 GiB  312.4 MiB/s  ETA 7 s"
std::string progress_line(const ProgressSnapshot& snapshot);
// Several lines: what was done, how fast, the write latencies.
std::string summary_text(const std::string& name, const ProgressSnapshot& snapshot);

} // namespace prewarmd
