#include "engine/progress.hh"

#include <nlohmann/json.hpp>

namespace prewarmd {

bool is_end(JobStatus status) {
    return status != JobStatus::queued && status != JobStatus::running &&
           status != JobStatus::paused;
}

void to_json(nlohmann::json& out, const ProgressSnapshot& s) {
    const auto& l = s.write_latency;
    out = {
        {"state", to_string(s.status)},
        {"reason", s.reason},
        {"mode", s.mode},
        {"strategy", s.strategy},
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
