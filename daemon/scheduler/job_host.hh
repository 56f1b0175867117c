// How the scheduler looks at disks and runs jobs. The real host opens, claims and
// warms disks with PrefillJob threads; the scheduler's tests put a fake in its place.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hh"
#include "discovery/disk_info.hh"
#include "discovery/match.hh"
#include "engine/job.hh"
#include "measurement/probe.hh"
#include "safety/classify.hh"
#include "safety/filesystem.hh"

namespace prewarmd {

struct JobSpec {
    std::string identity;
    JobOptions options;     // rate, mode, checkpoint path, ...
    bool requested = false; // asked for: a disk holding data may be warmed too
    // [prefill] probe: a cold probe before a job that starts from nothing (none
    // yet in `probe`), a warm one after a job that ends done.
    bool probe = false;
    ProbeFigures probe_before;       // from the record: a resumed job keeps its cold probe
    bool backend_block_auto = false; // the probe's granularity sets the backend block
    Strategy strategy = Strategy::full;
    // A filesystem job: the free space of this mounted filesystem, on the disk,
    // warmed online, keeping `reserve_bytes` available (docs/design.md).
    std::optional<FilesystemTarget> filesystem;
    uint64_t reserve_bytes = 0;
};

// A job on its own thread.
class RunningJob {
public:
    virtual ~RunningJob() = default;
    virtual ProgressSnapshot snapshot() const = 0;
    // Pause, resume, stop, a new rate or depth: takes effect on the job's thread.
    virtual void command(JobCommand command) = 0;
    virtual bool finished() const = 0;
    // Its probes so far (cold once measured, warm once done).
    virtual ProbeFigures probe() const { return {}; }
    // Joins the thread; the final snapshot.
    virtual ProgressSnapshot wait() = 0;
};

class JobHost {
public:
    virtual ~JobHost() = default;
    // A look at a disk without holding it: the verdict `prewarmd inspect` gives.
    virtual Classification look(const DiskInfo& disk) = 0;
    // The disks under /, /boot and swap, as they are now.
    virtual ProtectedDisks protected_disks() = 0;
    // The filesystems mounted from this disk (itself or a partition), as the system
    // sees them: each one that may be warmed online, or why not.
    virtual std::vector<Result<FilesystemTarget>> filesystems_on(const DiskInfo& disk) {
        (void)disk;
        return {};
    }
    // Claims the disk (an exclusive open of the same disk, by its sequence number,
    // and a verdict through that descriptor that allows the job) and starts the job;
    // `on_finished` is called from the job's thread when it ends. Errors say why not.
    virtual Result<std::unique_ptr<RunningJob>> start(const DiskInfo& disk, const JobSpec& spec,
                                                      std::function<void()> on_finished) = 0;
};

} // namespace prewarmd
