// The real JobHost: opens and claims disks, and warms each on its own thread.
#pragma once

#include <functional>
#include <string>

#include "config/config.hh"
#include "scheduler/job_host.hh"

namespace prewarmd {

class DiskJobHost final : public JobHost {
public:
    // `config` is the daemon's, as it is when a job starts; `log` takes the jobs' own
    // messages ("retry 1 of 3", the I/O engine used).
    DiskJobHost(const Config& config, std::function<void(bool warning, const std::string&)> log);

    Classification look(const DiskInfo& disk) override;
    ProtectedDisks protected_disks() override;
    std::vector<Result<FilesystemTarget>> filesystems_on(const DiskInfo& disk) override;
    Result<std::unique_ptr<RunningJob>> start(const DiskInfo& disk, const JobSpec& spec,
                                              std::function<void()> on_finished) override;

private:
    Result<std::unique_ptr<RunningJob>> start_filesystem(const DiskInfo& disk, const JobSpec& spec,
                                                         std::function<void()> on_finished);
    const Config& m_config;
    std::function<void(bool, const std::string&)> m_log;
};

// A probe asked for (Scheduler::begin_probe said it may run), on the caller's thread:
// the disk opened and judged as for a job; the warm places when `before` has a
// cold probe, else a cold probe. The figures after it.
Result<ProbeFigures> probe_disk(const DiskInfo& disk, const ProbeFigures& before);

} // namespace prewarmd
