#include "job/plan.hh"

#include <array>
#include <cerrno>
#include <cstdio>

#include "base/units.hh"

namespace prewarmd {
namespace {

// One piece per block, the block as the probe found it unless told otherwise.
Plan sparse_plan(const PlanInputs& in, const ColdProbe* probe, std::string why) {
    Plan p;
    p.piece = in.piece_bytes;
    p.block = !in.backend_block_explicit && probe && probe->granularity_bytes
                  ? probe->granularity_bytes
                  : in.backend_block_bytes;
    p.proven = probe && probe->allocation == Allocation::whole_block;
    p.note = "sparse: one " + format_size(p.piece) + " write per " + format_size(p.block) +
             " block (" + why + ")";
    return p;
}

std::string found(const ColdProbe& probe) {
    return "the probe found " + std::string(to_string(probe.allocation)) + " allocation (" +
           probe.allocation_note + ")";
}

Result<Plan> full(const PlanInputs&) {
    return Plan{};
}

// Sparse where the probe proved a first write warms its whole block and zero
// writes are kept, else every byte: where zeros may be discarded, one write per
// block warms less than nothing would tell.
Result<Plan> automatic(const PlanInputs& in) {
    if (!in.probe)
        return Plan{};
    if (!*in.probe)
        return Plan{.note = std::string(in.probe_name) + ": " + in.probe->error().message +
                            ": full writes"};
    const auto& probe = **in.probe;
    if (probe.allocation != Allocation::whole_block)
        return Plan{.note = "full writes: " + found(probe)};
    if (probe.zero_writes != ZeroWrites::kept)
        return Plan{.note = "full writes: zero writes " + std::string(to_string(probe.zero_writes)) +
                            " (" + probe.zero_writes_note + ")"};
    return sparse_plan(in, &probe, probe.allocation_note);
}

// One piece per block, as asked: unproven without a probe (proven after the job,
// docs/engine.md); refused where the probe failed, or found per-sector allocation.
Result<Plan> sparse(const PlanInputs& in) {
    if (!in.probe)
        return sparse_plan(in, nullptr, "strategy = \"sparse\", not probed");
    if (!*in.probe)
        return Error{in.probe->error().err, std::string(in.probe_name) + ": " +
                                                in.probe->error().message +
                                                ": sparse warming cannot be proven here"};
    const auto& probe = **in.probe;
    if (probe.allocation == Allocation::per_sector)
        return Error{-EOPNOTSUPP,
                     "sparse writes would leave the middle of the blocks cold: " + found(probe)};
    return sparse_plan(in, &probe,
                       probe.allocation == Allocation::whole_block
                           ? probe.allocation_note
                           : "strategy = \"sparse\", not proven: " + probe.allocation_note);
}

struct StrategyRow {
    Strategy strategy;
    Result<Plan> (*plan)(const PlanInputs&);
};

constexpr std::array<StrategyRow, 3> strategies{{
    {Strategy::full, full},
    {Strategy::automatic, automatic},
    {Strategy::sparse, sparse},
}};

// Zero writes discarded where the places are the job's own: the same plan with a
// non-zero fill. (Only a probe that may write data finds them discarded: the
// claim's, judge_zero_writes_by_data.)
Result<Plan> around_discarded_zeros(const PlanInputs& in, Plan plan) {
    if (in.mode != Mode::zero || !in.fill_allowed || !in.probe || !*in.probe ||
        (*in.probe)->zero_writes != ZeroWrites::discarded)
        return plan;
    const auto& probe = **in.probe;
    const std::string why = "this backend discards zero writes (" + probe.zero_writes_note + ")";
    plan.fill = free_space_fill;
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02x", free_space_fill);
    plan.note = (plan.note.empty() ? "" : plan.note + "; ") + why +
                ": free space that reads all-zero is filled with " + byte + " bytes instead";
    return plan;
}

} // namespace

Result<Plan> choose_plan(const PlanInputs& in) {
    if (in.mode == Mode::read)
        return Plan{}; // nothing written: nothing to choose
    for (const auto& row : strategies)
        if (row.strategy == in.strategy) {
            auto plan = row.plan(in);
            if (!plan)
                return plan;
            return around_discarded_zeros(in, std::move(*plan));
        }
    return Error{-EINVAL, "unknown strategy"};
}

} // namespace prewarmd
