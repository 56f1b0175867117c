// How a job's I/O reaches the kernel, fio-style: one small interface, one file per
// engine (io_uring, pread/pwrite, and a fake in the tests).
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.hh"
#include "base/names.hh"
#include "base/result.hh"

namespace prewarmd {

enum class IoOp : uint8_t { read, write, fsync };

struct IoRequest {
    IoOp op = IoOp::read;
    uint64_t offset = 0;
    uint32_t length = 0;
    char* buffer = nullptr;
    int buffer_index = -1; // index among the registered buffers
    uint64_t tag = 0;      // comes back in the completion
};

struct IoCompletion {
    uint64_t tag = 0;
    int64_t result = 0; // bytes transferred, or a negative errno
};

class IoEngine {
public:
    virtual ~IoEngine() = default;
    // "io_uring, registered buffers", "pread/pwrite", ...
    virtual std::string name() const = 0;
    // Offers the job's buffers for registration; returns a note when they could not
    // be registered (the engine then works without), or "" when they were.
    virtual std::string register_buffers(std::span<const iovec> buffers) = 0;
    // Gives the engine's I/O the priority class idle; call on the thread that will
    // queue. Fails with the kernel's errno.
    virtual Result<void> set_idle_priority() = 0;
    // Makes reap() return early whenever one of `fds` is readable (the caller reads
    // them: the job's wake-up eventfd, the watch of others' opens).
    virtual Result<void> watch(std::vector<int> fds) = 0;
    // Queues one request; synchronous engines do it here.
    virtual Result<void> queue(const IoRequest& request) = 0;
    // Hands the queued requests to the kernel.
    virtual Result<void> commit() = 0;
    // Appends finished requests to `out`. Waits, when none are ready, until one is,
    // the watched fd is readable or `deadline` passes (no deadline: no limit).
    virtual Result<void> reap(std::vector<IoCompletion>& out,
                              std::optional<Clock::time_point> deadline) = 0;
};

enum class IoEngineKind { automatic, uring, sync };
inline constexpr std::array<Named<IoEngineKind>, 3> io_engine_names{{
    {IoEngineKind::automatic, "auto"},
    {IoEngineKind::uring, "uring"},
    {IoEngineKind::sync, "sync"},
}};
static_assert(names_in_order(io_engine_names, IoEngineKind::sync));
constexpr std::span<const Named<IoEngineKind>> names_of(IoEngineKind) {
    return io_engine_names;
}

// io_uring where the kernel allows it; `automatic` falls back to pread/pwrite and
// says why in `note`.
Result<std::unique_ptr<IoEngine>> make_io_engine(IoEngineKind kind, int fd, unsigned depth,
                                                 std::string& note);

} // namespace prewarmd
