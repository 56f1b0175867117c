#include "measurement/progress.hh"

#include <algorithm>
#include <bit>

#include <nlohmann/json.hpp>

namespace prewarmd {

std::string_view to_string(JobState state) {
    switch (state) {
    case JobState::discovered:
        return "discovered";
    case JobState::skipped:
        return "skipped";
    case JobState::waiting:
        return "waiting";
    case JobState::queued:
        return "queued";
    case JobState::running:
        return "running";
    case JobState::paused:
        return "paused";
    case JobState::done:
        return "done";
    case JobState::failed:
        return "failed";
    case JobState::cancelled:
        return "cancelled";
    case JobState::released:
        return "released";
    case JobState::detached:
        return "detached";
    case JobState::interrupted:
        return "interrupted";
    }
    return "unknown";
}

std::optional<JobState> parse_job_state(std::string_view name) {
    for (int i = 0; i <= static_cast<int>(JobState::interrupted); ++i)
        if (to_string(static_cast<JobState>(i)) == name)
            return static_cast<JobState>(i);
    return std::nullopt;
}

bool is_final(JobState state) {
    switch (state) {
    case JobState::done:
    case JobState::failed:
    case JobState::cancelled:
    case JobState::released:
    case JobState::detached:
    case JobState::interrupted:
    case JobState::skipped:
        return true;
    default:
        return false;
    }
}

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

void to_json(nlohmann::json& out, const ProgressSnapshot& s) {
    const auto& l = s.write_latency;
    out = {
        {"state", to_string(s.state)},
        {"reason", s.reason},
        {"mode", s.mode},
        {"io_engine", s.io_engine},
        {"total_bytes", s.total_bytes},
        {"done_bytes", s.done_bytes},
        {"resumed_bytes", s.resumed_bytes},
        {"written_bytes", s.written_bytes},
        {"read_bytes", s.read_bytes},
        {"skipped_bytes", s.skipped_bytes},
        {"progress_ratio", s.ratio()},
        {"rate_limit_bytes_per_s", s.rate_limit_bytes_per_s},
        {"rate_1s_bytes_per_s", s.rate_1s_bytes_per_s},
        {"rate_10s_bytes_per_s", s.rate_10s_bytes_per_s},
        {"rate_avg_bytes_per_s", s.rate_avg_bytes_per_s},
        {"write_latency_us",
         {{"count", l.count},
          {"p50", l.p50.count()},
          {"p90", l.p90.count()},
          {"p99", l.p99.count()},
          {"max", l.max.count()}}},
        {"eta_seconds", s.eta ? nlohmann::json(s.eta->count()) : nlohmann::json(nullptr)},
        {"elapsed_seconds", static_cast<double>(s.elapsed.count()) / 1000.0},
    };
}

} // namespace prewarmd
