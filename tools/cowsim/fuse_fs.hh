// The FUSE face of a Simulator: one file per disk, plus .stats and .control.
#pragma once

#include <string>

#include "simulator.hh"

namespace cowsim {

// Mounts at `mountpoint` and serves until SIGINT, SIGTERM or an unmount.
// Returns a process exit code.
int serve(Simulator& simulator, const std::string& mountpoint, unsigned threads);

} // namespace cowsim
