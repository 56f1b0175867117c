// Work from other threads (the HTTP workers), run on the event loop's thread, so
// the scheduler stays single-threaded. The caller waits for the answer, or gives
// up after a timeout (the loop is stopping or stuck).
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>

#include "base/event_loop.hh"
#include "base/unique_fd.hh"

namespace prewarmd {

class Dispatcher {
public:
    static Result<std::unique_ptr<Dispatcher>> create(EventLoop& loop);

    template <typename Work>
    auto call(Work work, std::chrono::milliseconds timeout) -> std::optional<decltype(work())> {
        using Value = decltype(work());
        auto task = std::make_shared<std::packaged_task<Value()>>(std::move(work));
        auto answer = task->get_future();
        post([task] { (*task)(); });
        if (answer.wait_for(timeout) != std::future_status::ready)
            return std::nullopt;
        return answer.get();
    }

private:
    Dispatcher() = default;
    void post(std::function<void()> work);
    void run_posted();

    std::mutex m_mutex;
    std::deque<std::function<void()>> m_posted;
    UniqueFd m_wake;
    EventLoop::Handle m_watch;
};

} // namespace prewarmd
