#include "base/event_loop.hh"

#include <sys/epoll.h>

#include <cerrno>
#include <climits>

namespace prewarmd {

EventLoop::Handle::Handle(Handle&& other) noexcept
    : m_loop(std::exchange(other.m_loop, nullptr)), m_id(other.m_id) {}

EventLoop::Handle& EventLoop::Handle::operator=(Handle&& other) noexcept {
    if (this != &other) {
        if (m_loop)
            m_loop->remove(m_id);
        m_loop = std::exchange(other.m_loop, nullptr);
        m_id = other.m_id;
    }
    return *this;
}

EventLoop::Handle::~Handle() {
    if (m_loop)
        m_loop->remove(m_id);
}

Result<std::unique_ptr<EventLoop>> EventLoop::create() {
    std::unique_ptr<EventLoop> loop(new EventLoop);
    loop->m_epoll.reset(::epoll_create1(EPOLL_CLOEXEC));
    if (!loop->m_epoll)
        return errno_error("epoll_create1");
    return loop;
}

Result<EventLoop::Handle> EventLoop::watch(int fd, std::function<void()> on_readable) {
    return watch(fd, nullptr, std::move(on_readable));
}

Result<EventLoop::Handle> EventLoop::watch(int fd, std::function<uint32_t()> events,
                                           std::function<void()> on_ready) {
    const uint64_t id = m_next_id++;
    epoll_event event{};
    event.events = events ? events() : EPOLLIN;
    event.data.u64 = id;
    if (::epoll_ctl(m_epoll.get(), EPOLL_CTL_ADD, fd, &event) < 0)
        return errno_error("epoll_ctl");
    m_watches[id] = {fd, std::move(on_ready), std::move(events), event.events};
    return Handle(this, id);
}

EventLoop::Handle EventLoop::timer(std::function<std::optional<Clock::time_point>()> next,
                                   std::function<void()> fire) {
    const uint64_t id = m_next_id++;
    m_timers[id] = {std::move(next), std::move(fire)};
    return Handle(this, id);
}

void EventLoop::remove(uint64_t id) {
    if (const auto w = m_watches.find(id); w != m_watches.end()) {
        ::epoll_ctl(m_epoll.get(), EPOLL_CTL_DEL, w->second.fd, nullptr);
        m_watches.erase(w);
    }
    m_timers.erase(id);
}

Result<void> EventLoop::run() {
    m_quit = false;
    while (!m_quit) {
        std::optional<Clock::time_point> earliest;
        for (const auto& [id, t] : m_timers)
            if (const auto when = t.next(); when && (!earliest || *when < *earliest))
                earliest = when;
        int timeout = -1;
        if (earliest)
            timeout = static_cast<int>(std::clamp<int64_t>(
                std::chrono::ceil<std::chrono::milliseconds>(*earliest - Clock::now()).count(), 0,
                INT_MAX));
        for (auto& [id, w] : m_watches) {
            if (!w.events)
                continue;
            epoll_event event{};
            event.events = w.events();
            event.data.u64 = id;
            if (event.events != w.armed &&
                ::epoll_ctl(m_epoll.get(), EPOLL_CTL_MOD, w.fd, &event) == 0)
                w.armed = event.events;
        }
        epoll_event events[16];
        const int n = ::epoll_wait(m_epoll.get(), events, 16, timeout);
        if (n < 0 && errno != EINTR)
            return errno_error("epoll_wait");
        for (int i = 0; i < n && !m_quit; ++i) {
            const auto w = m_watches.find(events[i].data.u64);
            if (w != m_watches.end()) {
                auto callback = w->second.on_ready; // it may remove itself
                callback();
            }
        }
        const auto now = Clock::now();
        std::vector<uint64_t> due;
        for (const auto& [id, t] : m_timers)
            if (const auto when = t.next(); when && *when <= now)
                due.push_back(id);
        for (const auto id : due)
            if (!m_quit)
                if (const auto t = m_timers.find(id); t != m_timers.end()) {
                    auto fire = t->second.fire;
                    fire();
                }
    }
    return {};
}

} // namespace prewarmd
