#include "io/uring_engine.hh"

#include <linux/ioprio.h>
#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/units.hh"
#include "io/sync_engine.hh"

namespace prewarmd {

Result<std::unique_ptr<UringEngine>> UringEngine::create(int fd, unsigned depth) {
    std::unique_ptr<UringEngine> engine(new UringEngine(fd));
    // Room for every chunk's request, an fsync and the wake-up poll.
    const int r = io_uring_queue_init(depth + 4, &engine->m_ring, 0);
    if (r < 0) {
        engine->m_ring.ring_fd = -1;
        return Error{r, std::string("io_uring setup: ") + std::strerror(-r)};
    }
    return engine;
}

UringEngine::~UringEngine() {
    if (m_ring.ring_fd >= 0)
        io_uring_queue_exit(&m_ring);
}

std::string UringEngine::name() const {
    return m_registered ? "io_uring, registered buffers" : "io_uring";
}

std::string UringEngine::register_buffers(std::span<const iovec> buffers) {
    uint64_t bytes = 0;
    for (const auto& b : buffers)
        bytes += b.iov_len;
    int r =
        io_uring_register_buffers(&m_ring, buffers.data(), static_cast<unsigned>(buffers.size()));
    if (r == -ENOMEM) {
        // Registered buffers are locked memory: raise the soft limit as far as allowed.
        rlimit limit{};
        if (::getrlimit(RLIMIT_MEMLOCK, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
            limit.rlim_cur = limit.rlim_max;
            if (::setrlimit(RLIMIT_MEMLOCK, &limit) == 0)
                r = io_uring_register_buffers(&m_ring, buffers.data(),
                                              static_cast<unsigned>(buffers.size()));
        }
    }
    if (r == 0) {
        m_registered = true;
        return "";
    }
    if (r == -ENOMEM) {
        rlimit limit{};
        ::getrlimit(RLIMIT_MEMLOCK, &limit);
        return "registered buffers need " + format_size(bytes) +
               " of locked memory and RLIMIT_MEMLOCK allows " +
               (limit.rlim_cur == RLIM_INFINITY ? std::string("more")
                                                : format_size(limit.rlim_cur)) +
               ": using unregistered buffers";
    }
    return std::string("cannot register buffers (") + std::strerror(-r) +
           "): using unregistered buffers";
}

Result<io_uring_sqe*> UringEngine::next_sqe() {
    io_uring_sqe* sqe = io_uring_get_sqe(&m_ring);
    if (!sqe) {
        // The submission queue is full: hand it to the kernel and take a fresh entry.
        if (const int r = io_uring_submit(&m_ring); r < 0)
            return Error{r, std::string("io_uring submit: ") + std::strerror(-r)};
        sqe = io_uring_get_sqe(&m_ring);
        if (!sqe)
            return Error{-EBUSY, "io_uring submission queue is full"};
    }
    return sqe;
}

Result<void> UringEngine::arm_watch(size_t index) {
    auto sqe = next_sqe();
    if (!sqe)
        return sqe.error();
    io_uring_prep_poll_add(*sqe, m_watch_fds[index], POLLIN);
    io_uring_sqe_set_data64(*sqe, watch_tag + index);
    return {};
}

// Each request carries the class itself, whichever thread the ring issues it from.
Result<void> UringEngine::set_idle_priority() {
    m_ioprio = IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0);
    return {};
}

Result<void> UringEngine::watch(std::vector<int> fds) {
    m_watch_fds = std::move(fds);
    for (size_t i = 0; i < m_watch_fds.size(); ++i)
        if (auto armed = arm_watch(i); !armed)
            return armed;
    return {};
}

Result<void> UringEngine::queue(const IoRequest& r) {
    auto next = next_sqe();
    if (!next)
        return next.error();
    io_uring_sqe* sqe = *next;
    const bool fixed = m_registered && r.buffer_index >= 0;
    switch (r.op) {
    case IoOp::read:
        if (fixed)
            io_uring_prep_read_fixed(sqe, m_fd, r.buffer, r.length, r.offset, r.buffer_index);
        else
            io_uring_prep_read(sqe, m_fd, r.buffer, r.length, r.offset);
        break;
    case IoOp::write:
        if (fixed)
            io_uring_prep_write_fixed(sqe, m_fd, r.buffer, r.length, r.offset, r.buffer_index);
        else
            io_uring_prep_write(sqe, m_fd, r.buffer, r.length, r.offset);
        break;
    case IoOp::fsync:
        io_uring_prep_fsync(sqe, m_fd, IORING_FSYNC_DATASYNC);
        break;
    }
    sqe->ioprio = r.op == IoOp::fsync ? 0 : m_ioprio;
    io_uring_sqe_set_data64(sqe, r.tag);
    return {};
}

Result<void> UringEngine::commit() {
    const int r = io_uring_submit(&m_ring);
    if (r < 0 && r != -EINTR)
        return Error{r, std::string("io_uring submit: ") + std::strerror(-r)};
    return {};
}

Result<void> UringEngine::reap(std::vector<IoCompletion>& out,
                               std::optional<Clock::time_point> deadline) {
    io_uring_cqe* cqe = nullptr;
    if (io_uring_peek_cqe(&m_ring, &cqe) != 0) {
        int r;
        if (deadline) {
            const auto left = std::max(*deadline - Clock::now(), Clock::duration::zero());
            const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
            __kernel_timespec ts{ns / 1'000'000'000, ns % 1'000'000'000};
            r = io_uring_wait_cqe_timeout(&m_ring, &cqe, &ts);
        } else {
            r = io_uring_wait_cqe(&m_ring, &cqe);
        }
        if (r == -ETIME || r == -EINTR)
            return {};
        if (r < 0)
            return Error{r, std::string("io_uring wait: ") + std::strerror(-r)};
    }
    std::vector<size_t> rearm;
    unsigned head;
    unsigned seen = 0;
    io_uring_for_each_cqe(&m_ring, head, cqe) {
        ++seen;
        const uint64_t tag = io_uring_cqe_get_data64(cqe);
        if (tag >= watch_tag && tag - watch_tag < m_watch_fds.size()) {
            rearm.push_back(tag - watch_tag); // readable: its owner reads it
            continue;
        }
        out.push_back({tag, cqe->res});
    }
    io_uring_cq_advance(&m_ring, seen);
    for (const auto index : rearm)
        if (auto armed = arm_watch(index); !armed)
            return armed.error();
    if (!rearm.empty())
        return commit();
    return {};
}

Result<std::unique_ptr<IoEngine>> make_io_engine(IoEngineKind kind, int fd, unsigned depth,
                                                 std::string& note) {
    note.clear();
    if (kind == IoEngineKind::sync)
        return std::unique_ptr<IoEngine>(new SyncEngine(fd));
    auto uring = UringEngine::create(fd, depth);
    if (uring)
        return std::unique_ptr<IoEngine>(std::move(*uring));
    if (kind == IoEngineKind::uring)
        return uring.error();
    note = uring.error().message + ": using pread/pwrite";
    return std::unique_ptr<IoEngine>(new SyncEngine(fd));
}

} // namespace prewarmd
