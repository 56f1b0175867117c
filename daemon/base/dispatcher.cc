#include "base/dispatcher.hh"

#include <sys/eventfd.h>
#include <unistd.h>

namespace prewarmd {

Result<std::unique_ptr<Dispatcher>> Dispatcher::create(EventLoop& loop) {
    std::unique_ptr<Dispatcher> d(new Dispatcher);
    d->m_wake.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!d->m_wake)
        return errno_error("eventfd");
    auto watch = loop.watch(d->m_wake.get(), [raw = d.get()] { raw->run_posted(); });
    if (!watch)
        return watch.error();
    d->m_watch = std::move(*watch);
    return d;
}

void Dispatcher::post(std::function<void()> work) {
    {
        std::lock_guard lock(m_mutex);
        m_posted.push_back(std::move(work));
    }
    const uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(m_wake.get(), &one, sizeof one);
}

void Dispatcher::run_posted() {
    uint64_t count;
    while (::read(m_wake.get(), &count, sizeof count) > 0) {
    }
    std::deque<std::function<void()>> work;
    {
        std::lock_guard lock(m_mutex);
        work.swap(m_posted);
    }
    for (auto& w : work)
        w();
}

} // namespace prewarmd
