// Result of a low-level operation: a value, or a negative errno with a message a
// person can read. Low layers return these; the caller decides and logs once.
#pragma once

#include <cassert>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace prewarmd {

struct Error {
    int err = 0; // negative errno
    std::string message;
};

template <typename T>
class [[nodiscard]] Result {
public:
    Result(Error error) : m_state(std::in_place_index<1>, std::move(error)) {}
    // Anything a T can be made from (a variant's alternative, say) converts directly.
    template <typename U>
    requires std::is_constructible_v<T, U&&> &&(!std::is_same_v<std::remove_cvref_t<U>, Error>)&&(
        !std::is_same_v<std::remove_cvref_t<U>, Result>)Result(U&& value)
        : m_state(std::in_place_index<0>, std::forward<U>(value)) {}

    bool ok() const { return m_state.index() == 0; }
    explicit operator bool() const { return ok(); }

    T& value() {
        assert(ok());
        return std::get<0>(m_state);
    }
    const T& value() const {
        assert(ok());
        return std::get<0>(m_state);
    }
    T& operator*() { return value(); }
    const T& operator*() const { return value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }

    const Error& error() const {
        assert(!ok());
        return std::get<1>(m_state);
    }

private:
    std::variant<T, Error> m_state;
};

template <>
class [[nodiscard]] Result<void> {
public:
    Result() = default;
    Result(Error error) : m_error(std::move(error)), m_ok(false) {}

    bool ok() const { return m_ok; }
    explicit operator bool() const { return ok(); }
    const Error& error() const {
        assert(!ok());
        return m_error;
    }

private:
    Error m_error;
    bool m_ok = true;
};

// An Error from errno as it stands, prefixed with what was being done.
Error errno_error(std::string what);

} // namespace prewarmd
