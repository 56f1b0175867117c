// The plan of a job from its strategy and its probe (job/plan.cc): the one table
// that the daemon and `prewarmd prefill` both follow.
#include <doctest/doctest.h>

#include <cerrno>

#include "job/plan.hh"

using namespace prewarmd;

namespace {

ColdProbe probed(Allocation allocation, uint64_t granularity = 2ULL << 20) {
    ColdProbe p;
    p.allocation = allocation;
    p.allocation_note = "the evidence";
    p.granularity_bytes = granularity;
    p.zero_writes = ZeroWrites::kept;
    return p;
}

PlanInputs inputs(Strategy strategy, std::optional<Result<ColdProbe>> probe) {
    PlanInputs in;
    in.strategy = strategy;
    in.probe = std::move(probe);
    in.backend_block_bytes = 4ULL << 20;
    return in;
}

} // namespace

TEST_CASE("plan: full writes every byte and never needs a probe") {
    auto plan = choose_plan(inputs(Strategy::full, probed(Allocation::whole_block)));
    REQUIRE(plan);
    CHECK_FALSE(plan->sparse());
    CHECK(plan->note.empty());
}

TEST_CASE("plan: auto goes sparse only on a whole-block verdict, at the probe's granularity") {
    auto whole = choose_plan(inputs(Strategy::automatic, probed(Allocation::whole_block)));
    REQUIRE(whole);
    CHECK(whole->sparse());
    CHECK(whole->proven);
    CHECK(whole->block == (2ULL << 20));
    CHECK(whole->piece == probe_io_bytes);
    CHECK(whole->note.find("sparse: one 4.00 KiB write per 2.00 MiB block") == 0);

    for (auto allocation : {Allocation::per_sector, Allocation::unknown}) {
        auto plan = choose_plan(inputs(Strategy::automatic, probed(allocation)));
        REQUIRE(plan);
        CHECK_FALSE(plan->sparse());
        CHECK(plan->note.find("full writes: the probe found") == 0);
    }
}

TEST_CASE("plan: auto writes every byte where zero writes were not found kept") {
    for (auto zero_writes : {ZeroWrites::unknown, ZeroWrites::discarded}) {
        auto probe = probed(Allocation::whole_block);
        probe.zero_writes = zero_writes;
        probe.zero_writes_note = "the zeros' evidence";
        auto plan = choose_plan(inputs(Strategy::automatic, probe));
        REQUIRE(plan);
        CHECK_FALSE(plan->sparse());
        CHECK(plan->note.find("full writes: zero writes ") == 0);
        CHECK(plan->note.find("the zeros' evidence") != std::string::npos);
    }
}

TEST_CASE("plan: auto with no probe, or a failed one, writes every byte and says why") {
    auto none = choose_plan(inputs(Strategy::automatic, std::nullopt));
    REQUIRE(none);
    CHECK_FALSE(none->sparse());

    auto in = inputs(Strategy::automatic, Result<ColdProbe>(Error{-EBUSY, "the disk was opened"}));
    in.probe_name = "probe in the claim";
    auto failed = choose_plan(in);
    REQUIRE(failed);
    CHECK_FALSE(failed->sparse());
    CHECK(failed->note == "probe in the claim: the disk was opened: full writes");
}

TEST_CASE("plan: forced sparse is refused where it would leave blocks cold or cannot be proven") {
    auto per_sector = choose_plan(inputs(Strategy::sparse, probed(Allocation::per_sector)));
    REQUIRE_FALSE(per_sector);
    CHECK(per_sector.error().err == -EOPNOTSUPP);
    CHECK(per_sector.error().message.find("sparse writes would leave the middle of the blocks cold") == 0);

    auto failed = choose_plan(inputs(Strategy::sparse, Result<ColdProbe>(Error{-EIO, "read failed"})));
    REQUIRE_FALSE(failed);
    CHECK(failed.error().err == -EIO);

    auto unknown = choose_plan(inputs(Strategy::sparse, probed(Allocation::unknown)));
    REQUIRE(unknown);
    CHECK(unknown->sparse());
    CHECK_FALSE(unknown->proven);

    auto unprobed = choose_plan(inputs(Strategy::sparse, std::nullopt));
    REQUIRE(unprobed);
    CHECK(unprobed->sparse());
    CHECK(unprobed->block == (4ULL << 20)); // the options' block: no probe said otherwise
}

TEST_CASE("plan: an explicit backend block is kept over the probe's granularity") {
    auto in = inputs(Strategy::automatic, probed(Allocation::whole_block));
    in.backend_block_explicit = true;
    auto plan = choose_plan(in);
    REQUIRE(plan);
    CHECK(plan->block == (4ULL << 20));
}

TEST_CASE("plan: a read job writes nothing, whatever the strategy") {
    auto in = inputs(Strategy::sparse, probed(Allocation::per_sector));
    in.mode = Mode::read;
    auto plan = choose_plan(in);
    REQUIRE(plan);
    CHECK_FALSE(plan->sparse());
}

TEST_CASE("plan: where the claim's probe found zero writes discarded, a non-zero fill") {
    auto discarded = probed(Allocation::unknown);
    discarded.zero_writes = ZeroWrites::discarded;
    discarded.zero_writes_note = "a zero write costs 0.50x a data write";
    auto in = inputs(Strategy::automatic, discarded);
    in.fill_allowed = true;
    auto plan = choose_plan(in);
    REQUIRE(plan);
    CHECK_FALSE(plan->sparse());
    CHECK(plan->fill == free_space_fill);
    CHECK(plan->note.find("this backend discards zero writes") != std::string::npos);

    in.fill_allowed = false; // a disk's content: never filled
    auto block = choose_plan(in);
    REQUIRE(block);
    CHECK(block->fill == 0);

    auto kept = probed(Allocation::unknown);
    kept.zero_writes = ZeroWrites::kept;
    auto fs = inputs(Strategy::automatic, kept);
    fs.fill_allowed = true;
    auto zeros = choose_plan(fs);
    REQUIRE(zeros);
    CHECK(zeros->fill == 0);
}
