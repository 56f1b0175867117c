#include "scheduler/disk_state.hh"

#include <algorithm>
#include <initializer_list>

namespace prewarmd {
namespace {

using S = DiskState;

struct Transitions {
    S from;
    std::initializer_list<S> to;
};

// Each state and where it may go. A record read at start may say running, queued,
// waiting or detached without a job: those go on (queued, waiting) or are judged
// again (skipped, discovered) when the disk is back.
const Transitions table[] = {
    {S::discovered, {S::skipped, S::waiting, S::queued, S::cancelled}},
    {S::skipped, {S::discovered, S::waiting, S::queued, S::cancelled}},
    {S::waiting, {S::discovered, S::skipped, S::queued, S::paused, S::cancelled, S::released}},
    {S::queued,
     {S::discovered, S::skipped, S::waiting, S::running, S::paused, S::cancelled, S::released,
      S::detached}},
    {S::running,
     {S::discovered, S::skipped, S::waiting, S::queued, S::paused, S::warm, S::unproven,
      S::not_warmable, S::failed, S::cancelled, S::released, S::detached}},
    {S::paused,
     {S::waiting, S::queued, S::running, S::warm, S::unproven, S::not_warmable, S::failed,
      S::cancelled, S::released, S::detached}},
    // Warm, and given back since by discards: judged afresh (warm_again).
    {S::warm, {S::discovered, S::skipped, S::waiting, S::queued}},
    // A block job not proven warm, or on a backend that discards zero writes: its
    // filesystem, once mounted, is warmed through its free space (take_up_filesystem).
    {S::unproven, {S::waiting, S::queued}},
    {S::not_warmable, {S::waiting, S::queued}},
    {S::failed, {S::waiting, S::queued, S::cancelled}},
    {S::cancelled, {S::waiting, S::queued}},
    {S::released, {S::waiting, S::queued, S::cancelled}},
    {S::detached, {S::discovered, S::skipped, S::waiting, S::queued, S::cancelled}},
};

} // namespace

std::optional<DiskState> parse_disk_state(std::string_view name) {
    // Records written before the outcomes: a job that visited every chunk, proven or not.
    if (name == "done")
        return S::unproven;
    return parse_name<DiskState>(name);
}

bool transition_allowed(DiskState from, DiskState to) {
    if (from == to)
        return true;
    for (const auto& row : table)
        if (row.from == from)
            return std::find(row.to.begin(), row.to.end(), to) != row.to.end();
    return false;
}

bool is_recorded(DiskState state) {
    return state != S::discovered && state != S::skipped && state != S::waiting;
}

bool is_finished(DiskState state) {
    return state == S::warm || state == S::unproven || state == S::not_warmable;
}

DiskState state_after(JobStatus end) {
    switch (end) {
    case JobStatus::warm:
        return S::warm;
    case JobStatus::unproven:
        return S::unproven;
    case JobStatus::not_warmable:
        return S::not_warmable;
    case JobStatus::cancelled:
        return S::cancelled;
    case JobStatus::released:
        return S::released;
    case JobStatus::detached:
        return S::detached;
    case JobStatus::paused:
        return S::paused;
    case JobStatus::stepped_aside:
        return S::waiting;
    case JobStatus::running:
    case JobStatus::queued:
    case JobStatus::visited: // the runner always says what it came to
    case JobStatus::failed:
        break;
    }
    return S::failed;
}

} // namespace prewarmd
