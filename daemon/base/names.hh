// One name table per enum: each enumerator's name, once, in the enum's order. The
// table sits under its enum, with a check that it lists every enumerator in order
// up to the last (a new enumerator without a name does not compile), and a
// names_of() that to_string, parse_name and names_text find it by:
//
//   enum class Mode { zero, rewrite, read };
//   inline constexpr std::array<Named<Mode>, 3> mode_names{{...}};
//   static_assert(names_in_order(mode_names, Mode::read));
//   constexpr std::span<const Named<Mode>> names_of(Mode) { return mode_names; }
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace prewarmd {

template <typename E>
struct Named {
    E value;
    std::string_view name;
};

template <typename E>
concept HasNames = requires(E e) {
    { names_of(e) } -> std::convertible_to<std::span<const Named<E>>>;
};

template <typename E, size_t N>
constexpr bool names_in_order(const std::array<Named<E>, N>& table, E last) {
    for (size_t i = 0; i < N; ++i)
        if (static_cast<size_t>(table[i].value) != i || table[i].name.empty())
            return false;
    return N == static_cast<size_t>(last) + 1;
}

// The names alone, for a table of choices (control/schema.hh).
template <typename E, size_t N>
constexpr std::array<std::string_view, N> names_only(const std::array<Named<E>, N>& table) {
    std::array<std::string_view, N> out{};
    for (size_t i = 0; i < N; ++i)
        out[i] = table[i].name;
    return out;
}

template <HasNames E>
constexpr std::string_view to_string(E value) {
    const auto table = names_of(value);
    const auto i = static_cast<size_t>(value);
    return i < table.size() ? table[i].name : "unknown";
}

template <HasNames E>
constexpr std::optional<E> parse_name(std::string_view text) {
    for (const auto& n : names_of(E{}))
        if (n.name == text)
            return n.value;
    return std::nullopt;
}

// "zero, rewrite or read": the words, `last` before the last one.
inline std::string joined_words(std::span<const std::string_view> words,
                                std::string_view last = " or ") {
    std::string out;
    for (size_t i = 0; i < words.size(); ++i)
        out += std::string(i == 0 ? "" : i + 1 == words.size() ? last : ", ") +
               std::string(words[i]);
    return out;
}

// E's names so, for messages.
template <HasNames E>
std::string names_text(std::string_view last = " or ") {
    std::vector<std::string_view> words;
    for (const auto& n : names_of(E{}))
        words.push_back(n.name);
    return joined_words(words, last);
}

} // namespace prewarmd
