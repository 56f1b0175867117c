#include "cli/command.hh"

#include <cstdio>

namespace prewarmd {

int command_error(std::string_view command, int code, const std::string& message) {
    std::fprintf(stderr, "prewarmd %.*s: %s\n", static_cast<int>(command.size()), command.data(),
                 message.c_str());
    return code;
}

std::optional<int> start_command(std::string_view command, const std::vector<std::string>& args,
                                 std::span<const OptionSpec> specs,
                                 const std::function<std::string()>& usage, ParsedArgs& out) {
    auto parsed = parse_args(args, specs);
    if (!parsed)
        return command_error(command, exit_usage, parsed.error().message);
    if (parsed->has("help")) {
        std::fputs(usage().c_str(), stdout);
        return exit_ok;
    }
    out = std::move(*parsed);
    return std::nullopt;
}

} // namespace prewarmd
