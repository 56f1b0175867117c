#include "engine/deadline.hh"

#include <algorithm>
#include <cerrno>
#include <cmath>

#include "base/units.hh"
#include "control/refusal.hh"

namespace prewarmd {
namespace {

// Behind the plan by more than this share of its span, or 10 s if longer: late.
constexpr double behind_share = 0.05;
constexpr double behind_min_s = 10;
// The job aims to end this share of the span before the deadline, from a second
// (its flush and its proof after the last chunk) to a minute.
constexpr double headroom_share = 0.05;
constexpr double headroom_min_s = 1;
constexpr double headroom_max_s = 60;

uint64_t needed_rate(uint64_t bytes, double seconds) {
    return static_cast<uint64_t>(std::ceil(static_cast<double>(bytes) / std::max(seconds, 1.0)));
}

} // namespace

DeadlinePace pace_deadline(const Deadline& d, uint64_t done_bytes, double now_s,
                           uint64_t cap_bytes_per_s) {
    DeadlinePace p;
    const uint64_t left = d.total_bytes - std::min(d.total_bytes, done_bytes);
    const double seconds_left = static_cast<double>(d.at_unix) - now_s;
    const double span = static_cast<double>(std::max<int64_t>(1, d.at_unix - d.start_unix));
    const double plan_rate = static_cast<double>(d.total_bytes) / span;
    const double planned_done =
        plan_rate * std::clamp(now_s - static_cast<double>(d.start_unix), 0.0, span);
    p.margin_s = plan_rate > 0 ? (static_cast<double>(done_bytes) - planned_done) / plan_rate : 0;
    if (left == 0)
        return p; // done: nothing to pace
    if (seconds_left <= 0) {
        p.needed_bytes_per_s = 0;
        p.rate_bytes_per_s = cap_bytes_per_s;
        p.on_track = p.can_meet = false;
        return p;
    }
    p.needed_bytes_per_s = needed_rate(left, seconds_left);
    p.can_meet = !cap_bytes_per_s || p.needed_bytes_per_s <= cap_bytes_per_s;
    // Aimed a little early, so that a last chunk or a slow second does not miss it.
    const double headroom = std::clamp(headroom_share * span, headroom_min_s, headroom_max_s);
    const uint64_t aim =
        needed_rate(left, seconds_left > headroom + 1 ? seconds_left - headroom : seconds_left);
    p.rate_bytes_per_s = cap_bytes_per_s ? std::min(cap_bytes_per_s, aim) : aim;
    p.on_track = p.can_meet && p.margin_s >= -std::max(behind_min_s, behind_share * span);
    return p;
}

Deadline deadline_within(uint64_t within_s, uint64_t total_bytes) {
    const double now = wall_seconds();
    return Deadline{static_cast<int64_t>(std::floor(now)),
                    static_cast<int64_t>(std::ceil(now + static_cast<double>(within_s))),
                    total_bytes};
}

Result<void> check_deadline(uint64_t total_bytes, uint64_t within_s, uint64_t cap_bytes_per_s,
                            const std::string& cap_name) {
    const uint64_t needed = needed_rate(total_bytes, static_cast<double>(within_s));
    if (!cap_bytes_per_s || needed <= cap_bytes_per_s)
        return {};
    return refuse(Refusal::deadline_too_near,
                  "warming " + format_size(total_bytes) + " within " +
                      format_duration(std::chrono::seconds(within_s)) + " needs " +
                      format_rate(static_cast<double>(needed)) + ", over " + cap_name + " of " +
                      format_rate(static_cast<double>(cap_bytes_per_s)) +
                      ": give it more time, or a higher rate");
}

} // namespace prewarmd
