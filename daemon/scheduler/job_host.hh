// How the scheduler looks at disks and runs jobs. The real host (service/
// disk_job_host.hh) starts JobRunners on threads; the scheduler's tests put a fake
// in its place.
#pragma once

#include <cerrno>
#include <functional>
#include <memory>
#include <vector>

#include "base/result.hh"
#include "discovery/disk_info.hh"
#include "discovery/match.hh"
#include "job/spec.hh"
#include "safety/classify.hh"
#include "safety/filesystem.hh"

namespace prewarmd {

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
    // Bytes discarded on the disk since boot, by anyone: the kernel's count
    // (sectors_discarded). Errors when it cannot be read.
    virtual Result<uint64_t> discarded_bytes(const DiskInfo& disk) {
        (void)disk;
        return Error{-ENOTSUP, "no count of discards"};
    }
    // Opens the disk of `spec.disk` (by its sequence number, judged again through
    // that descriptor) and starts the job; `on_finished` is called from the job's
    // thread when it ends. Errors say why not.
    virtual Result<std::unique_ptr<RunningJob>> start(const JobSpec& spec,
                                                      std::function<void()> on_finished) = 0;
};

} // namespace prewarmd
