// A disk's lifecycle as the scheduler keeps it (docs/design.md), and the changes
// it may go through: one table, which Scheduler::set_state checks.
//
//   discovered -> skipped (why) | waiting (attach grace, boot) -> queued -> running
//   running <-> paused -> warm | unproven | not_warmable | failed | cancelled | released
//   running -> waiting: the job stepped aside for another user of the disk
//   detached: the disk went away mid-job (resumes if the same disk returns)
#pragma once

#include <optional>
#include <string_view>

#include "engine/progress.hh"

namespace prewarmd {

enum class DiskState {
    discovered,
    skipped,
    waiting,
    queued,
    running,
    paused,
    warm,         // the job's proof says the backend allocated it
    unproven,     // written, not proven warm
    not_warmable, // zero writes discarded: warmed through its filesystem, once mounted
    failed,
    cancelled,
    released,
    detached,
};
inline constexpr DiskState last_disk_state = DiskState::detached;

std::string_view to_string(DiskState state);
std::optional<DiskState> parse_disk_state(std::string_view name);

// Whether a disk may go from `from` to `to`; staying put (a new reason) always may.
bool transition_allowed(DiskState from, DiskState to);

// States that say something was, or is, done about the disk: kept across restarts.
bool is_recorded(DiskState state);

// Whether a disk's job ended with one of the outcomes (warm, unproven, not_warmable).
bool is_finished(DiskState state);

// The state a job's end leaves its disk in.
DiskState state_after(JobStatus end);

} // namespace prewarmd
