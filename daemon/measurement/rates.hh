// What a job's progress is measured with: the windowed rate and the latency
// histogram (engine/progress.hh has the snapshot that front ends render).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

#include "base/clock.hh"

namespace prewarmd {

// Bytes per second over the last 1 s, 10 s, ...: 100 ms buckets over 10 s.
class RateWindow {
public:
    explicit RateWindow(Clock::time_point start) : m_start(start) {}
    void add(Clock::time_point now, uint64_t bytes);
    double rate(Clock::time_point now, std::chrono::milliseconds window) const;

    static constexpr std::chrono::milliseconds bucket{100};
    static constexpr std::chrono::milliseconds longest{10000};

private:
    static constexpr size_t bucket_count = longest / bucket + 1;
    int64_t bucket_of(Clock::time_point t) const { return (t - m_start) / bucket; }

    Clock::time_point m_start;
    std::array<uint64_t, bucket_count> m_bytes{};
    std::array<int64_t, bucket_count> m_ids{}; // which bucket a slot holds now
};

// The bucket bounds of the write latency histogram in /metrics, in seconds.
inline constexpr std::array<double, 12> latency_bounds_seconds{
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};

struct LatencySummary {
    uint64_t count = 0;
    std::chrono::microseconds p50{0}, p90{0}, p99{0}, max{0};
    double sum_seconds = 0;
    // Observations at or under each of latency_bounds_seconds (cumulative).
    std::array<uint64_t, latency_bounds_seconds.size()> at_or_under{};
};

// Log-linear histogram of latencies: 8 buckets per power of two of microseconds,
// so a percentile is known to within 12.5%, from 1 us to over an hour.
class LatencyHistogram {
public:
    void record(std::chrono::nanoseconds latency);
    uint64_t count() const { return m_count; }
    std::chrono::microseconds percentile(double fraction) const;
    LatencySummary summary() const;
    // Observations at or under `bound` (for Prometheus' cumulative buckets).
    uint64_t count_at_or_under(std::chrono::microseconds bound) const;

    static constexpr size_t sub_buckets = 8;
    static constexpr size_t bucket_count = 33 * sub_buckets;

private:
    static size_t index_of(uint64_t us);
    static uint64_t upper_bound_us(size_t index);

    std::array<uint64_t, bucket_count> m_counts{};
    uint64_t m_count = 0;
    uint64_t m_max_us = 0;
    uint64_t m_sum_us = 0;
};

} // namespace prewarmd
