#include "base/args.hh"

#include <algorithm>
#include <cerrno>

namespace prewarmd {

bool ParsedArgs::has(std::string_view name) const {
    return std::any_of(m_options.begin(), m_options.end(),
                       [&](const auto& o) { return o.first == name; });
}

std::optional<std::string> ParsedArgs::value(std::string_view name) const {
    for (auto it = m_options.rbegin(); it != m_options.rend(); ++it)
        if (it->first == name)
            return it->second;
    return std::nullopt;
}

std::vector<std::string> ParsedArgs::values(std::string_view name) const {
    std::vector<std::string> out;
    for (const auto& [key, value] : m_options)
        if (key == name)
            out.push_back(value);
    return out;
}

Result<ParsedArgs> parse_args(const std::vector<std::string>& args,
                              std::span<const OptionSpec> specs) {
    ParsedArgs parsed;
    bool options_done = false;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (options_done || arg.size() < 2 || arg[0] != '-') {
            parsed.positional.push_back(arg);
            continue;
        }
        if (arg == "--") {
            options_done = true;
            continue;
        }
        const OptionSpec* spec = nullptr;
        std::optional<std::string> inline_value;
        std::string shown = arg;
        if (arg[1] == '-') {
            auto name = std::string_view(arg).substr(2);
            if (const auto eq = name.find('='); eq != std::string_view::npos) {
                inline_value = std::string(name.substr(eq + 1));
                name = name.substr(0, eq);
                shown = "--" + std::string(name);
            }
            for (const auto& s : specs)
                if (s.name == name)
                    spec = &s;
        } else if (arg.size() == 2) {
            for (const auto& s : specs)
                if (s.short_name == arg[1])
                    spec = &s;
        }
        if (!spec)
            return Error{-EINVAL, "unknown option '" + shown + "' (see --help)"};
        std::string value;
        if (spec->value_name.empty()) {
            if (inline_value)
                return Error{-EINVAL, shown + " takes no value"};
        } else if (inline_value) {
            value = *inline_value;
        } else if (i + 1 < args.size()) {
            value = args[++i];
        } else {
            return Error{-EINVAL, shown + " needs a value (" + std::string(spec->value_name) + ")"};
        }
        parsed.m_options.emplace_back(std::string(spec->name), std::move(value));
    }
    return parsed;
}

std::string options_help(std::span<const OptionSpec> specs) {
    std::vector<std::string> left;
    size_t width = 0;
    for (const auto& s : specs) {
        std::string l = s.short_name ? std::string("  -") + s.short_name + ", " : "      ";
        l += "--" + std::string(s.name);
        if (!s.value_name.empty())
            l += " " + std::string(s.value_name);
        width = std::max(width, l.size());
        left.push_back(std::move(l));
    }
    std::string out;
    for (size_t i = 0; i < specs.size(); ++i) {
        // Help may hold several lines; later ones line up under the first.
        std::string_view help = specs[i].help;
        std::string line = left[i] + std::string(width + 2 - left[i].size(), ' ');
        for (size_t nl; (nl = help.find('\n')) != std::string_view::npos;) {
            out += line + std::string(help.substr(0, nl)) + "\n";
            help = help.substr(nl + 1);
            line = std::string(width + 2, ' ');
        }
        out += line + std::string(help) + "\n";
    }
    return out;
}

} // namespace prewarmd
