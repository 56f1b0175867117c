// The fallback engine: pread/pwrite/fdatasync on the job's thread, one at a time.
#pragma once

#include "io/io_engine.hh"

namespace prewarmd {

class SyncEngine final : public IoEngine {
public:
    explicit SyncEngine(int fd) : m_fd(fd) {}
    std::string name() const override { return "pread/pwrite"; }
    std::string register_buffers(std::span<const iovec>) override { return ""; }
    Result<void> set_idle_priority() override;
    Result<void> watch(std::vector<int> fds) override;
    Result<void> queue(const IoRequest& request) override;
    Result<void> commit() override { return {}; }
    Result<void> reap(std::vector<IoCompletion>& out,
                      std::optional<Clock::time_point> deadline) override;

private:
    int m_fd;
    std::vector<int> m_watch_fds;
    std::vector<IoCompletion> m_done;
};

} // namespace prewarmd
