// The daemon's one event loop: epoll on descriptors, and timers that say when they
// next want to run (nothing at all, when idle). Registrations and timers remove
// themselves when their handle goes.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>

#include "base/clock.hh"
#include "base/result.hh"
#include "base/unique_fd.hh"

namespace prewarmd {

class EventLoop {
public:
    class Handle {
    public:
        Handle() = default;
        Handle(Handle&& other) noexcept;
        Handle& operator=(Handle&& other) noexcept;
        Handle(const Handle&) = delete;
        Handle& operator=(const Handle&) = delete;
        ~Handle();

    private:
        friend class EventLoop;
        Handle(EventLoop* loop, uint64_t id) : m_loop(loop), m_id(id) {}
        EventLoop* m_loop = nullptr;
        uint64_t m_id = 0;
    };

    static Result<std::unique_ptr<EventLoop>> create();

    // Calls `on_readable` whenever `fd` is readable.
    Result<Handle> watch(int fd, std::function<void()> on_readable);
    // For a descriptor whose wanted events change (a D-Bus connection that has
    // something to send): `events()` (EPOLLIN, EPOLLOUT) is asked before every wait,
    // and `on_ready` called when any of them happened.
    Result<Handle> watch(int fd, std::function<uint32_t()> events, std::function<void()> on_ready);
    // Calls `fire` once `next()` has passed; `next()` is asked again after every round,
    // nullopt meaning not now.
    Handle timer(std::function<std::optional<Clock::time_point>()> next,
                 std::function<void()> fire);

    // Runs until quit().
    Result<void> run();
    void quit() { m_quit = true; }

private:
    EventLoop() = default;
    void remove(uint64_t id);

    struct Watch {
        int fd;
        std::function<void()> on_ready;
        std::function<uint32_t()> events; // empty: EPOLLIN, always
        uint32_t armed = 0;
    };
    struct Timer {
        std::function<std::optional<Clock::time_point>()> next;
        std::function<void()> fire;
    };
    UniqueFd m_epoll;
    std::map<uint64_t, Watch> m_watches;
    std::map<uint64_t, Timer> m_timers;
    uint64_t m_next_id = 1;
    bool m_quit = false;
};

} // namespace prewarmd
