// Which events a disk's change makes for a control plane (docs/events.md): a job
// started; a job ended, by how (warm, unproven, not_warmable, failed, cancelled,
// released, detached, stepped-aside: the job statuses' names); a warm disk given back by discards
// (warm_again, said by the scheduler itself). Resuming a paused job starts none.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "scheduler/scheduler.hh"

namespace prewarmd {

// "org.prewarmd.disk." + what
std::string disk_event_type(std::string_view what);

class DiskEvents {
public:
    // The events `now` makes, against the disk as it was last seen, each as the last
    // word of its type ("warm"); a job's end before the next one's start.
    std::vector<std::string> changed(const DiskView& now);
    void removed(const std::string& identity);

private:
    struct Seen {
        DiskState state = DiskState::discovered;
        std::map<JobStatus, uint64_t> job_ends;
    };
    std::map<std::string, Seen> m_seen;
};

} // namespace prewarmd
