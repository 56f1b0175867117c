// The words one picks among, for a job and for the daemon, each enum with its one
// name table (base/names.hh): the file, the API, D-Bus, prewarmctl and prefill
// all read and write these names.
#pragma once

#include "base/names.hh"

namespace prewarmd {

// What a job does to each chunk (docs/engine.md): `zero` writes zeros over backend
// blocks that read all-zero, `rewrite` writes back what it read, `read` only reads.
enum class Mode { zero, rewrite, read };
inline constexpr std::array<Named<Mode>, 3> mode_names{{
    {Mode::zero, "zero"},
    {Mode::rewrite, "rewrite"},
    {Mode::read, "read"},
}};
static_assert(names_in_order(mode_names, Mode::read));
constexpr std::span<const Named<Mode>> names_of(Mode) {
    return mode_names;
}

// How much of each backend block a job writes (docs/engine.md, sparse warming):
// `full` every byte; `sparse` one small piece per block; `automatic` ("auto")
// sparse where the probe proved a first write warms its whole block.
enum class Strategy { automatic, full, sparse };
inline constexpr std::array<Named<Strategy>, 3> strategy_names{{
    {Strategy::automatic, "auto"},
    {Strategy::full, "full"},
    {Strategy::sparse, "sparse"},
}};
static_assert(names_in_order(strategy_names, Strategy::sparse));
constexpr std::span<const Named<Strategy>> names_of(Strategy) {
    return strategy_names;
}

// Which disks are warmed by themselves: `blank` ones that are quiet, or `never`
// (only when asked).
enum class AutoPrefill { blank, never };
inline constexpr std::array<Named<AutoPrefill>, 2> auto_prefill_names{{
    {AutoPrefill::blank, "blank"},
    {AutoPrefill::never, "never"},
}};
static_assert(names_in_order(auto_prefill_names, AutoPrefill::never));
constexpr std::span<const Named<AutoPrefill>> names_of(AutoPrefill) {
    return auto_prefill_names;
}

} // namespace prewarmd
