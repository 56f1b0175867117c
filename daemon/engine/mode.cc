#include "engine/mode.hh"

namespace prewarmd {

std::string_view to_string(Mode mode) {
    switch (mode) {
    case Mode::zero:
        return "zero";
    case Mode::rewrite:
        return "rewrite";
    case Mode::read:
        return "read";
    }
    return "unknown";
}

std::optional<Mode> parse_mode(std::string_view text) {
    for (const auto mode : {Mode::zero, Mode::rewrite, Mode::read})
        if (to_string(mode) == text)
            return mode;
    return std::nullopt;
}

std::string_view to_string(Strategy strategy) {
    switch (strategy) {
    case Strategy::automatic:
        return "auto";
    case Strategy::full:
        return "full";
    case Strategy::sparse:
        return "sparse";
    }
    return "unknown";
}

std::optional<Strategy> parse_strategy(std::string_view text) {
    for (const auto strategy : {Strategy::automatic, Strategy::full, Strategy::sparse})
        if (to_string(strategy) == text)
            return strategy;
    return std::nullopt;
}

} // namespace prewarmd
