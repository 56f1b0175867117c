#include "service/disk_job_host.hh"

#include <fcntl.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <cstring>

#include "base/sysfs.hh"
#include "base/unique_fd.hh"
#include "job/runner.hh"
#include "safety/system.hh"

namespace prewarmd {

DiskJobHost::DiskJobHost(std::function<void(bool, const std::string&)> log)
    : m_log(std::move(log)) {}

Classification DiskJobHost::look(const DiskInfo& disk) {
    // Read-only and shared: a look must not make anyone's mkfs fail.
    UniqueFd fd(::open(disk.devnode.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (!fd) {
        Classification c;
        c.reasons.push_back("cannot open " + disk.devnode + ": " + std::strerror(errno));
        return c;
    }
    return classify(disk, fd.get(), SystemView::read());
}

Result<uint64_t> DiskJobHost::discarded_bytes(const DiskInfo& disk) {
    auto sectors = sectors_discarded(makedev(disk.major, disk.minor));
    if (!sectors)
        return sectors.error();
    return *sectors * 512;
}

ProtectedDisks DiskJobHost::protected_disks() {
    const auto system = SystemView::read();
    return find_protected_disks(system.mounts, system.swaps, system.sys);
}

std::vector<Result<FilesystemTarget>> DiskJobHost::filesystems_on(const DiskInfo& disk) {
    return filesystems_on_disk(disk.name, parse_mountinfo(read_text(system_mountinfo_path())),
                               SysBlock());
}

Result<std::unique_ptr<RunningJob>> DiskJobHost::start(const JobSpec& spec,
                                                       std::function<void()> on_finished) {
    auto runner = JobRunner::open(spec, [log = m_log, identity = spec.identity](
                                            EventLevel level, const std::string& message) {
        log(level == EventLevel::warning, identity + ": " + message);
    });
    if (!runner)
        return runner.error();
    return start_thread(std::move(*runner), std::move(on_finished));
}

} // namespace prewarmd
