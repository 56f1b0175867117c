// A job's progress: the one snapshot that every front end renders (CLI, HTTP,
// D-Bus, sd_notify), and the job's status in it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "base/names.hh"
#include "measurement/rates.hh"

namespace prewarmd {

// Where a job stands, as its snapshot says: not started yet, at work, paused (asked
// to, or because the backend is full), or how it ended. A job stopped from outside
// ends as its stopper says (cancelled, released, detached); one that stepped aside
// for another user of the disk ends `stepped_aside`, to go on once it is quiet.
// The engine ends a job that visited every chunk `visited`; the runner (job/) then
// says what that did to the backend, by its proof: one of the outcomes, `warm`
// (proven), `unproven` (written, not proven warm) or `not_warmable` (zero writes
// are discarded here: only a filesystem's job, with its fill, warms the disk).
enum class JobStatus {
    queued,
    running,
    paused,
    visited,
    warm,
    unproven,
    not_warmable,
    failed,
    cancelled,
    released,
    detached,
    stepped_aside,
};
inline constexpr std::array<Named<JobStatus>, 12> job_status_names{{
    {JobStatus::queued, "queued"},
    {JobStatus::running, "running"},
    {JobStatus::paused, "paused"},
    {JobStatus::visited, "visited"},
    {JobStatus::warm, "warm"},
    {JobStatus::unproven, "unproven"},
    {JobStatus::not_warmable, "not_warmable"},
    {JobStatus::failed, "failed"},
    {JobStatus::cancelled, "cancelled"},
    {JobStatus::released, "released"},
    {JobStatus::detached, "detached"},
    {JobStatus::stepped_aside, "stepped-aside"},
}};
static_assert(names_in_order(job_status_names, JobStatus::stepped_aside));
constexpr std::span<const Named<JobStatus>> names_of(JobStatus) {
    return job_status_names;
}
bool is_end(JobStatus status);

struct ProgressSnapshot {
    JobStatus status = JobStatus::queued;
    std::string reason; // why it is paused, failed, detached, ... ("" otherwise)
    std::string mode;
    std::string strategy;  // "full", "sparse" (done_bytes: covered; written_bytes: written)
    std::string io_engine; // "io_uring, registered buffers", "pread/pwrite", ...
    uint64_t total_bytes = 0;
    uint64_t done_bytes = 0;    // visited: written, skipped or read, including resumed
    uint64_t resumed_bytes = 0; // done before this run, from the checkpoint
    uint64_t written_bytes = 0;
    uint64_t read_bytes = 0;
    uint64_t skipped_bytes = 0;          // left alone: held data already
    uint64_t rate_limit_bytes_per_s = 0; // 0: unlimited
    double rate_1s_bytes_per_s = 0;
    double rate_10s_bytes_per_s = 0;
    double rate_avg_bytes_per_s = 0;
    LatencySummary write_latency;
    std::optional<std::chrono::seconds> eta;
    std::chrono::milliseconds elapsed{0};

    // The share done, 0 to 1; a job with nothing to visit is done with it.
    double ratio() const {
        return total_bytes ? static_cast<double>(done_bytes) / static_cast<double>(total_bytes) : 1;
    }
};

void to_json(nlohmann::json& out, const ProgressSnapshot& snapshot);

} // namespace prewarmd
