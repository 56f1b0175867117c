// One lambda per alternative of a variant, for std::visit: a variant that grows an
// alternative no lambda takes fails to compile, where an `if constexpr` chain or a
// holds_alternative test would quietly take it for another one.
#pragma once

namespace prewarmd {

template <typename... F>
struct Overloaded : F... {
    using F::operator()...;
};
template <typename... F>
Overloaded(F...) -> Overloaded<F...>;

} // namespace prewarmd
