// `prewarmd prefill PATH`: one job in the foreground.
#pragma once

#include <string>
#include <vector>

namespace prewarmd {

// Exit codes, documented in the command's help and in prewarmd(8).
enum ExitCode : int {
    exit_done = 0,
    exit_failed = 1,
    exit_usage = 2,
    exit_interrupted = 3, // another writer wrote to the disk
    exit_detached = 4,    // the device went away
    exit_backend_full = 5,
    exit_refused = 6, // in use or read-only
    exit_sigint = 130,
    exit_sigterm = 143,
};

int prefill_command(const std::vector<std::string>& args);

} // namespace prewarmd
