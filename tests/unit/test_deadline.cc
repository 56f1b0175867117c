#include <doctest/doctest.h>

#include "control/refusal.hh"
#include "engine/deadline.hh"

using namespace prewarmd;

namespace {
constexpr uint64_t MiB = 1 << 20;
}

TEST_CASE("a deadline's pace: the bytes left over the time left, within the cap") {
    const Deadline d{1000, 1000 + 100, 1000 * MiB}; // 1000 MiB in 100 s: 10 MiB/s
    auto p = pace_deadline(d, 0, 1000, 0);
    CHECK(p.needed_bytes_per_s == 10 * MiB);
    // Aimed 5% of the span early: the bytes over 95 s.
    CHECK(p.rate_bytes_per_s == (1000 * MiB + 94) / 95);
    CHECK(p.on_track);
    CHECK(p.can_meet);
    CHECK(p.margin_s == doctest::Approx(0));
    // Half way in time, half done: on the plan, the same rate.
    p = pace_deadline(d, 500 * MiB, 1050, 0);
    CHECK(p.needed_bytes_per_s == 10 * MiB);
    CHECK(p.margin_s == doctest::Approx(0));
    // Ahead: slower now, and the margin says by how much (in seconds of the plan).
    p = pace_deadline(d, 700 * MiB, 1050, 0);
    CHECK(p.needed_bytes_per_s == 6 * MiB);
    CHECK(p.margin_s == doctest::Approx(20));
    CHECK(p.on_track);
    // Behind by 40 s of a 100 s plan (the slack: 10 s): late, but it can still make it.
    p = pace_deadline(d, 100 * MiB, 1050, 0);
    CHECK(p.needed_bytes_per_s == 18 * MiB);
    CHECK(p.margin_s == doctest::Approx(-40));
    CHECK(p.can_meet);
    CHECK_FALSE(p.on_track);
    // The need over the cap: the cap, and said it cannot be met.
    p = pace_deadline(d, 100 * MiB, 1050, 15 * MiB);
    CHECK(p.rate_bytes_per_s == 15 * MiB);
    CHECK_FALSE(p.can_meet);
    CHECK_FALSE(p.on_track);
    // Within the headroom and a second of the deadline: the bytes over the time left.
    p = pace_deadline(d, 960 * MiB, 1096, 0);
    CHECK(p.rate_bytes_per_s == 10 * MiB);
    // A span of an hour aims a minute early, not 3 minutes.
    const Deadline hour{0, 3600, 3540 * MiB};
    CHECK(pace_deadline(hour, 0, 0, 0).rate_bytes_per_s == 3540 * MiB / 3540);
    // Past the deadline with bytes left: flat out within the cap.
    p = pace_deadline(d, 900 * MiB, 1101, 15 * MiB);
    CHECK(p.rate_bytes_per_s == 15 * MiB);
    CHECK_FALSE(p.can_meet);
    p = pace_deadline(d, 900 * MiB, 1101, 0);
    CHECK(p.rate_bytes_per_s == 0); // unlimited
    // Done: nothing to pace, and on track.
    p = pace_deadline(d, 1000 * MiB, 1090, 15 * MiB);
    CHECK(p.on_track);
    CHECK(p.needed_bytes_per_s == 0);
}

TEST_CASE("a deadline that needs more than the highest rate allowed is refused up front") {
    CHECK(check_deadline(1024 * MiB, 10, 0, "the total rate").ok()); // unlimited
    CHECK(check_deadline(1024 * MiB, 100, 50 * MiB, "the total rate").ok());
    const auto refused = check_deadline(1024 * MiB, 10, 50 * MiB, "the total rate");
    REQUIRE_FALSE(refused.ok());
    CHECK(refusal_of(refused.error()) == Refusal::deadline_too_near);
    CHECK(refused.error().message.find("needs 102") != std::string::npos);
    CHECK(refused.error().message.find("the total rate of 50") != std::string::npos);
}
