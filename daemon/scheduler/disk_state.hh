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

#include "base/names.hh"
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
inline constexpr std::array<Named<DiskState>, 13> disk_state_names{{
    {DiskState::discovered, "discovered"},
    {DiskState::skipped, "skipped"},
    {DiskState::waiting, "waiting"},
    {DiskState::queued, "queued"},
    {DiskState::running, "running"},
    {DiskState::paused, "paused"},
    {DiskState::warm, "warm"},
    {DiskState::unproven, "unproven"},
    {DiskState::not_warmable, "not_warmable"},
    {DiskState::failed, "failed"},
    {DiskState::cancelled, "cancelled"},
    {DiskState::released, "released"},
    {DiskState::detached, "detached"},
}};
static_assert(names_in_order(disk_state_names, DiskState::detached));
constexpr std::span<const Named<DiskState>> names_of(DiskState) {
    return disk_state_names;
}
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
