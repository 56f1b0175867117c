// How a job writes, chosen once its probe has spoken: one row per strategy
// (plan.cc), the same for every kind of job. docs/engine.md says why each row
// decides as it does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/result.hh"
#include "control/choices.hh"
#include "measurement/probe.hh"

namespace prewarmd {

struct Plan {
    // 0: every byte; else one piece of this many bytes at the start of each
    // backend block (`block` bytes), standing for the whole block.
    uint64_t piece = 0;
    uint64_t block = 0;
    bool proven = false; // sparse where the probe before found whole-block allocation
    // The backend discards zero writes (the probe's zero_writes) and the places are
    // the job's own to fill (claimed free space): it writes this byte instead of
    // zeros where a block reads all-zero. 0: zeros.
    unsigned char fill = 0;
    std::string note; // what was chosen and why ("" when nothing was asked)

    bool sparse() const { return piece != 0; }
};

struct PlanInputs {
    Strategy strategy = Strategy::full;
    Mode mode = Mode::zero;
    // The probe before the job: not made (nullopt), failed, or its figures.
    std::optional<Result<ColdProbe>> probe;
    std::string_view probe_name = "probe"; // in messages: "probe", "probe in the claim"
    uint64_t backend_block_bytes = 0;      // the options'
    bool backend_block_explicit = false;   // kept even where the probe found another
    uint64_t piece_bytes = probe_io_bytes; // a sparse job's piece
    bool fill_allowed = false;             // the places are the job's own (a claim)
};


// The plan, or why the strategy cannot be followed here (forced sparse writes
// that cannot be proven, or that the probe says would leave blocks cold).
Result<Plan> choose_plan(const PlanInputs& inputs);

} // namespace prewarmd
