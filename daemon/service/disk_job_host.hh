// The real JobHost: looks at disks as the system sees them, and starts each job
// as a JobRunner on a thread of its own (job/runner.hh).
#pragma once

#include <functional>
#include <string>

#include "scheduler/job_host.hh"

namespace prewarmd {

class DiskJobHost final : public JobHost {
public:
    // `log` takes the jobs' own messages ("retry 1 of 3", the I/O engine used).
    explicit DiskJobHost(std::function<void(bool warning, const std::string&)> log);

    Classification look(const DiskInfo& disk) override;
    ProtectedDisks protected_disks() override;
    std::vector<Result<FilesystemTarget>> filesystems_on(const DiskInfo& disk) override;
    Result<uint64_t> discarded_bytes(const DiskInfo& disk) override;
    Result<std::unique_ptr<RunningJob>> start(const JobSpec& spec,
                                              std::function<void()> on_finished) override;

private:
    std::function<void(bool, const std::string&)> m_log;
};

} // namespace prewarmd
