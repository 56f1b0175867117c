// prewarmd: pre-warms thin-provisioned virtual disks.
#include <cstdio>
#include <string>
#include <vector>

#include "cli/command.hh"
#include "cli/config_command.hh"
#include "cli/inspect_command.hh"
#include "cli/prefill_command.hh"
#include "cli/probe_command.hh"
#include "cli/run_command.hh"
#include "io/free_space.hh"

namespace {

constexpr const char* usage =
    "Usage: prewarmd [COMMAND] [OPTIONS]\n\n"
    "Commands:\n"
    "  run            the service, the default (see prewarmd run --help)\n"
    "  prefill PATH   warm one disk in the foreground (see prewarmd prefill --help)\n"
    "  inspect [DEV]  what the daemon would make of each disk (prewarmd inspect --help)\n"
    "  probe DEV      what a first write costs there, and the backend's block size\n"
    "  config         check a configuration file, or print the example\n\n"
    "Options:\n"
    "  -h, --help     this text\n"
    "      --version  the version\n";

} // namespace

int main(int argc, char** argv) {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (prewarmd::is_reap_command(args))
        return prewarmd::reap_claim(args);
    // No command, or options first: the service.
    if (args.empty() || (args[0].size() > 1 && args[0][0] == '-' && args[0] != "-h" &&
                         args[0] != "--help" && args[0] != "--version"))
        return prewarmd::run_command(args);
    const auto& command = args[0];
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (command == "-h" || command == "--help") {
        std::fputs(usage, stdout);
        return prewarmd::exit_ok;
    }
    if (command == "--version") {
        std::printf("prewarmd %s\n", PREWARMD_VERSION);
        return prewarmd::exit_ok;
    }
    if (command == "run")
        return prewarmd::run_command(rest);
    if (command == "prefill")
        return prewarmd::prefill_command(rest);
    if (command == "config")
        return prewarmd::config_command(rest);
    if (command == "inspect")
        return prewarmd::inspect_command(rest);
    if (command == "probe")
        return prewarmd::probe_command(rest);
    std::fprintf(stderr, "prewarmd: unknown command '%s' (see prewarmd --help)\n", command.c_str());
    return prewarmd::exit_usage;
}
