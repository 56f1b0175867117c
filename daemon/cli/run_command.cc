#include "cli/run_command.hh"

#include "base/args.hh"
#include "cli/command.hh"
#include "service/service.hh"

namespace prewarmd {
namespace {

constexpr OptionSpec run_options[] = {
    {"config", 'c', "FILE",
     "the settings (default /etc/prewarmd/prewarmd.toml; when that\n"
     "is missing, the defaults)"},
    {"state-dir", 0, "DIR", "where job records and checkpoints live (overrides the config)"},
    {"help", 'h', "", "this text"},
};

std::string usage() {
    return "Usage: prewarmd [run] [OPTIONS]\n\n"
           "The service: finds the disks the config's rules match as they are attached, and\n"
           "warms those that are blank and stay unused through the attach grace, one job per\n"
           "disk, resumed after a restart. Logs to the journal under systemd, else stderr.\n"
           "SIGHUP reloads the config (and says what needs a restart); SIGTERM checkpoints.\n\n" +
           options_help(run_options) +
           "\nExit status: 0 stopped by SIGTERM or SIGINT; 1 a failure; 2 the configuration\n"
           "is wrong; 3 another prewarmd uses the state directory.\n";
}

} // namespace

int run_command(const std::vector<std::string>& args) {
    ParsedArgs parsed;
    if (const auto done = start_command("run", args, run_options, usage, parsed))
        return *done;
    if (!parsed.positional.empty())
        return command_error("run", 2, "unexpected argument '" + parsed.positional[0] + "'");
    ServiceOptions options;
    if (const auto config = parsed.value("config")) {
        options.config_path = *config;
        options.config_given = true;
    }
    options.state_dir = parsed.value("state-dir");
    return run_service(options);
}

} // namespace prewarmd
