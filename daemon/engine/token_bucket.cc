#include "engine/token_bucket.hh"

#include <algorithm>
#include <cmath>

namespace prewarmd {

TokenBucket::TokenBucket(uint64_t rate, uint64_t burst, Clock::time_point now) : m_last(now) {
    set_rate(rate, burst, now);
    m_tokens = m_burst;
}

void TokenBucket::set_rate(uint64_t rate, uint64_t burst, Clock::time_point now) {
    refill(now);
    m_rate = rate;
    m_burst = static_cast<double>(burst ? burst : rate);
    m_tokens = std::min(m_tokens, m_burst);
}

void TokenBucket::refill(Clock::time_point now) {
    if (now <= m_last)
        return;
    const double seconds = std::chrono::duration<double>(now - m_last).count();
    m_tokens = std::min(m_burst, m_tokens + seconds * static_cast<double>(m_rate));
    m_last = now;
}

Clock::time_point TokenBucket::ready_at(Clock::time_point now, uint64_t bytes) {
    if (m_rate == 0)
        return now;
    refill(now);
    const double needed = std::min(static_cast<double>(bytes), m_burst);
    if (m_tokens >= needed)
        return now;
    const double seconds = (needed - m_tokens) / static_cast<double>(m_rate);
    return now +
           std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds)) +
           Clock::duration(1); // never before the tokens are there
}

void TokenBucket::take(Clock::time_point now, uint64_t bytes) {
    if (m_rate == 0)
        return;
    refill(now);
    m_tokens -= static_cast<double>(bytes);
}

} // namespace prewarmd
