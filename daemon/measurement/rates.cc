#include "measurement/rates.hh"

#include <algorithm>
#include <bit>

namespace prewarmd {

void RateWindow::add(Clock::time_point now, uint64_t bytes) {
    const int64_t id = bucket_of(now);
    auto& slot = m_ids[static_cast<size_t>(id) % bucket_count];
    auto& count = m_bytes[static_cast<size_t>(id) % bucket_count];
    if (slot != id) {
        slot = id;
        count = 0;
    }
    count += bytes;
}

double RateWindow::rate(Clock::time_point now, std::chrono::milliseconds window) const {
    window = std::clamp(window, bucket, longest);
    const int64_t current = bucket_of(now);
    const int64_t whole = window / bucket - 1; // full buckets before the current one
    uint64_t bytes = 0;
    for (int64_t id = std::max<int64_t>(0, current - whole); id <= current; ++id)
        if (m_ids[static_cast<size_t>(id) % bucket_count] == id)
            bytes += m_bytes[static_cast<size_t>(id) % bucket_count];
    // The time those buckets cover: the whole ones, and the current one so far.
    const auto current_start = m_start + current * bucket;
    auto covered = std::chrono::duration<double>(now - current_start) +
                   std::chrono::duration<double>(std::min(current, whole) * bucket);
    if (covered.count() <= 0)
        return 0;
    return static_cast<double>(bytes) / covered.count();
}

size_t LatencyHistogram::index_of(uint64_t us) {
    if (us < sub_buckets)
        return static_cast<size_t>(us);
    const auto power = static_cast<size_t>(std::bit_width(us) - 1); // 2^power <= us
    const size_t sub = static_cast<size_t>((us >> (power - 3)) & (sub_buckets - 1));
    return std::min((power - 2) * sub_buckets + sub, bucket_count - 1);
}

uint64_t LatencyHistogram::upper_bound_us(size_t index) {
    if (index < sub_buckets)
        return index;
    const size_t power = index / sub_buckets + 2;
    const uint64_t sub = index % sub_buckets;
    return ((sub_buckets + sub + 1) << (power - 3)) - 1;
}

void LatencyHistogram::record(std::chrono::nanoseconds latency) {
    const auto us = static_cast<uint64_t>(std::max<int64_t>(
        0, std::chrono::duration_cast<std::chrono::microseconds>(latency).count()));
    m_counts[index_of(us)]++;
    m_count++;
    m_max_us = std::max(m_max_us, us);
    m_sum_us += us;
}

std::chrono::microseconds LatencyHistogram::percentile(double fraction) const {
    if (m_count == 0)
        return {};
    const auto rank = static_cast<uint64_t>(fraction * static_cast<double>(m_count - 1)) + 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < bucket_count; ++i) {
        seen += m_counts[i];
        if (seen >= rank)
            return std::chrono::microseconds(
                static_cast<int64_t>(std::min(upper_bound_us(i), m_max_us)));
    }
    return std::chrono::microseconds(static_cast<int64_t>(m_max_us));
}

uint64_t LatencyHistogram::count_at_or_under(std::chrono::microseconds bound) const {
    uint64_t n = 0;
    for (size_t i = 0; i < bucket_count; ++i)
        if (upper_bound_us(i) <= static_cast<uint64_t>(bound.count()))
            n += m_counts[i];
    return n;
}

LatencySummary LatencyHistogram::summary() const {
    LatencySummary s{m_count,
                     percentile(0.50),
                     percentile(0.90),
                     percentile(0.99),
                     std::chrono::microseconds(static_cast<int64_t>(m_max_us)),
                     static_cast<double>(m_sum_us) / 1e6,
                     {}};
    for (size_t i = 0; i < latency_bounds_seconds.size(); ++i)
        s.at_or_under[i] = count_at_or_under(
            std::chrono::microseconds(static_cast<int64_t>(latency_bounds_seconds[i] * 1e6)));
    return s;
}

} // namespace prewarmd
