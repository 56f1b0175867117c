// The throttle: a token bucket on bytes, refilled at `rate` up to `burst`. Work is
// charged when it starts; the bucket says when the next piece may start, so the
// job waits on a timer for exactly that long.
#pragma once

#include <cstdint>

#include "base/clock.hh"

namespace prewarmd {

class TokenBucket {
public:
    // rate 0: unlimited. burst 0: one second's worth of the rate.
    TokenBucket(uint64_t rate_bytes_per_s, uint64_t burst_bytes, Clock::time_point now);
    void set_rate(uint64_t rate_bytes_per_s, uint64_t burst_bytes, Clock::time_point now);
    uint64_t rate_bytes_per_s() const { return m_rate; }

    // When `bytes` may start: `now` when the bucket holds them (or as many as it
    // can hold at all), else the moment it will.
    Clock::time_point ready_at(Clock::time_point now, uint64_t bytes);
    // Charges `bytes`; the bucket may go into debt, paid back before the next start.
    void take(Clock::time_point now, uint64_t bytes);

private:
    void refill(Clock::time_point now);

    uint64_t m_rate = 0;
    double m_burst = 0;
    double m_tokens = 0;
    Clock::time_point m_last;
};

} // namespace prewarmd
