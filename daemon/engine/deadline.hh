// A start's deadline ("warm within 30 min"): the rate that ends the job then, and
// whether it is on track. The job is paced, not run flat out: every second its
// rate is what the bytes left need in the time left, within its cap (its own
// rate, else the total rate). The neighbours win: where adaptive mode backs the
// jobs off, a deadline job backs off too, and says early that it will be late
// (docs/adaptive.md, "Deadlines").
#pragma once

#include <cstdint>
#include <string>

#include "base/result.hh"

namespace prewarmd {

struct Deadline {
    int64_t start_unix = 0; // when it was asked for
    int64_t at_unix = 0;    // when the disk must be warm
    uint64_t total_bytes = 0;
};

struct DeadlinePace {
    // What the job is given: the need, aimed 5% of the span early (a second to a
    // minute), within the cap; 0: unlimited.
    uint64_t rate_bytes_per_s = 0;
    uint64_t needed_bytes_per_s = 0; // what the bytes left need in the time left
    // Ahead of the plan (a straight line from the start to the deadline), in
    // seconds of it: negative when behind.
    double margin_s = 0;
    bool on_track = true; // not behind by more than the slack, and the need within the cap
    bool can_meet = true; // the need within the cap, and time left
};

// The deadline's pace at `now_s` (seconds since the epoch, with their fraction:
// whole ones would let a short deadline slip by up to one), `done_bytes` of it
// done; `cap` 0: unlimited.
DeadlinePace pace_deadline(const Deadline& deadline, uint64_t done_bytes, double now_s,
                           uint64_t cap_bytes_per_s);
// A deadline `within_s` from now, of `total_bytes`: its end rounded up to a whole
// second, never sooner than asked.
Deadline deadline_within(uint64_t within_s, uint64_t total_bytes);

// Refused at the start: a whole disk of `total_bytes` within `within_s` needs more
// than `cap_bytes_per_s` (0: unlimited, never refused). The message names the rate
// it would need and the cap (`cap_name`: "its own rate", "the total rate").
Result<void> check_deadline(uint64_t total_bytes, uint64_t within_s, uint64_t cap_bytes_per_s,
                            const std::string& cap_name);

} // namespace prewarmd
