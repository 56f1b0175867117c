#include "cli/config_command.hh"

#include <cstdio>

#include "cli/command.hh"
#include "config/config.hh"
#include "service/service.hh"

namespace prewarmd {
namespace {

constexpr OptionSpec config_options[] = {
    {"check", 0, "FILE", "check FILE: say what is wrong, by line and key (exit 2)"},
    {"example", 0, "", "print every setting at its default, with its help"},
    {"help", 'h', "", "this text"},
};

std::string usage() {
    return "Usage: prewarmd config --check FILE | --example\n\n" + options_help(config_options);
}

} // namespace

int config_command(const std::vector<std::string>& args) {
    ParsedArgs parsed;
    if (const auto done = start_command("config", args, config_options, usage, parsed))
        return *done;
    if (parsed.has("example")) {
        std::fputs(example_config().c_str(), stdout);
        return exit_ok;
    }
    const auto file = parsed.value("check");
    if (!file)
        return command_error("config", exit_usage, "--check FILE or --example (see --help)");
    const auto config = load_config(*file, false);
    if (!config)
        return command_error("config", exit_usage, config.error().message);
    if (auto valid = check_config(*config); !valid)
        return command_error("config", exit_usage, valid.error().message);
    std::printf("%s: fine\n", file->c_str());
    return exit_ok;
}

} // namespace prewarmd
