// Command-line options declared once in a table that drives parsing and help.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hh"

namespace prewarmd {

struct OptionSpec {
    std::string_view name;       // long name, without "--"
    char short_name = 0;         // 0: none
    std::string_view value_name; // "": a flag, no value
    std::string_view help;
};

class ParsedArgs {
public:
    bool has(std::string_view name) const;
    // The last value given, or nullopt.
    std::optional<std::string> value(std::string_view name) const;
    // Every value given, in order (repeatable options).
    std::vector<std::string> values(std::string_view name) const;
    std::vector<std::string> positional;

private:
    friend Result<ParsedArgs> parse_args(const std::vector<std::string>&,
                                         std::span<const OptionSpec>);
    std::vector<std::pair<std::string, std::string>> m_options;
};

// --name VALUE, --name=VALUE, -n VALUE, flags; "--" ends the options.
Result<ParsedArgs> parse_args(const std::vector<std::string>& args,
                              std::span<const OptionSpec> specs);
// Two columns: "  -n, --name VALUE   help".
std::string options_help(std::span<const OptionSpec> specs);

} // namespace prewarmd
