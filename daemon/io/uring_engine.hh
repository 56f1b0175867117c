// The io_uring engine: requests pipelined in one ring, registered buffers where
// RLIMIT_MEMLOCK allows, and the job's wake-up eventfd polled in the same ring.
#pragma once

#include <liburing.h>

#include <vector>

#include "io/io_engine.hh"

namespace prewarmd {

class UringEngine final : public IoEngine {
public:
    // Fails with the kernel's errno: -ENOSYS (no io_uring), -EPERM (disabled), ...
    static Result<std::unique_ptr<UringEngine>> create(int fd, unsigned depth);
    ~UringEngine() override;
    UringEngine(const UringEngine&) = delete;
    UringEngine& operator=(const UringEngine&) = delete;

    std::string name() const override;
    std::string register_buffers(std::span<const iovec> buffers) override;
    Result<void> set_idle_priority() override;
    Result<void> watch(std::vector<int> fds) override;
    Result<void> queue(const IoRequest& request) override;
    Result<void> commit() override;
    Result<void> reap(std::vector<IoCompletion>& out,
                      std::optional<Clock::time_point> deadline) override;

private:
    explicit UringEngine(int fd) : m_fd(fd) {}
    Result<io_uring_sqe*> next_sqe();
    Result<void> arm_watch(size_t index);

    // Tags of the watches' polls: this and up (a job's own tags stay far below).
    static constexpr uint64_t watch_tag = uint64_t{1} << 62;
    io_uring m_ring{};
    int m_fd;
    std::vector<int> m_watch_fds;
    bool m_registered = false;
    uint16_t m_ioprio = 0; // 0: the submitting thread's
};

} // namespace prewarmd
