// prewarmd: pre-warms thin-provisioned virtual disks.
#include <cstdio>
#include <string>
#include <vector>

#include "cli/inspect_command.hh"
#include "cli/prefill_command.hh"

namespace {

constexpr const char* usage =
    "Usage: prewarmd COMMAND [OPTIONS]\n\n"
    "Commands:\n"
    "  prefill PATH   warm one disk in the foreground (see prewarmd prefill --help)\n"
    "  inspect [DEV]  what the daemon would make of each disk (prewarmd inspect --help)\n\n"
    "Options:\n"
    "  -h, --help     this text\n"
    "      --version  the version\n";

} // namespace

int main(int argc, char** argv) {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty()) {
        std::fputs(usage, stderr);
        return prewarmd::exit_usage;
    }
    const auto& command = args[0];
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (command == "-h" || command == "--help") {
        std::fputs(usage, stdout);
        return prewarmd::exit_done;
    }
    if (command == "--version") {
        std::printf("prewarmd %s\n", PREWARMD_VERSION);
        return prewarmd::exit_done;
    }
    if (command == "prefill")
        return prewarmd::prefill_command(rest);
    if (command == "inspect")
        return prewarmd::inspect_command(rest);
    std::fprintf(stderr, "prewarmd: unknown command '%s' (see prewarmd --help)\n", command.c_str());
    return prewarmd::exit_usage;
}
