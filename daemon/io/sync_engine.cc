#include "io/sync_engine.hh"

#include <linux/ioprio.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>

namespace prewarmd {

// The calling thread's class: pread and pwrite carry no priority of their own.
Result<void> SyncEngine::set_idle_priority() {
    if (::syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0)) <
        0)
        return errno_error("ioprio_set");
    return {};
}

Result<void> SyncEngine::watch(std::vector<int> fds) {
    m_watch_fds = std::move(fds);
    return {};
}

Result<void> SyncEngine::queue(const IoRequest& r) {
    ssize_t n = 0;
    do {
        switch (r.op) {
        case IoOp::read:
            n = ::pread(m_fd, r.buffer, r.length, static_cast<off_t>(r.offset));
            break;
        case IoOp::write:
            n = ::pwrite(m_fd, r.buffer, r.length, static_cast<off_t>(r.offset));
            break;
        case IoOp::fsync:
            n = ::fdatasync(m_fd);
            break;
        }
    } while (n < 0 && errno == EINTR);
    m_done.push_back({r.tag, n < 0 ? -errno : n});
    return {};
}

Result<void> SyncEngine::reap(std::vector<IoCompletion>& out,
                              std::optional<Clock::time_point> deadline) {
    if (!m_done.empty()) {
        out.insert(out.end(), m_done.begin(), m_done.end());
        m_done.clear();
        return {};
    }
    int timeout_ms = -1;
    if (deadline) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now());
        timeout_ms = static_cast<int>(std::clamp<int64_t>(left.count(), 0, INT_MAX));
    }
    std::vector<pollfd> pfds;
    for (const int fd : m_watch_fds)
        pfds.push_back({fd, POLLIN, 0});
    if (::poll(pfds.data(), pfds.size(), timeout_ms) < 0 && errno != EINTR)
        return errno_error("poll");
    return {};
}

} // namespace prewarmd
