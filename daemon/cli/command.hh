// What every command does first: parse its arguments, answer --help, or say what
// is wrong in one line.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/args.hh"
#include "control/refusal.hh"

namespace prewarmd {

// The commands' exit codes, documented in their help and in prewarmd(8).
enum ExitCode : int {
    exit_ok = 0, // prefill: warm, as its proof says
    exit_failed = 1,
    exit_usage = 2,
    exit_stepped_aside = 3, // another process opened or wrote to the disk
    exit_detached = 4,      // the device went away
    exit_backend_full = 5,
    exit_refused = 6, // in use or read-only
    // 7 is prewarmctl's "timed out": the outcomes have the same codes in both
    // (outcome_exit).
    exit_unproven = ctl_exit::unproven,         // prefill: every chunk visited, not proven warm
    exit_not_warmable = ctl_exit::not_warmable, // prefill: zero writes discarded
    exit_sigint = 130,
    exit_sigterm = 143,
};

// Prints "prewarmd COMMAND: MESSAGE" on standard error; returns `code`.
int command_error(std::string_view command, int code, const std::string& message);

// Parses `args` into `out`. Returns the exit code to leave with (after --help, or a
// bad argument), or nullopt to go on.
std::optional<int> start_command(std::string_view command, const std::vector<std::string>& args,
                                 std::span<const OptionSpec> specs,
                                 const std::function<std::string()>& usage, ParsedArgs& out);

} // namespace prewarmd
