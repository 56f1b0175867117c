// Work from other threads (the HTTP workers), run on the event loop's thread, so
// the scheduler stays single-threaded. The caller waits for the answer, or gives
// up after a timeout (the loop is stopping or stuck): then the work never runs, so
// that a request answered "busy" changes nothing later. Work that has begun when
// the time is up is waited for, and its answer given.
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
        struct Call {
            std::packaged_task<Value()> task;
            std::mutex mutex;
            bool begun = false, abandoned = false;
        };
        auto call = std::make_shared<Call>();
        call->task = std::packaged_task<Value()>(std::move(work));
        auto answer = call->task.get_future();
        post([call] {
            {
                std::lock_guard lock(call->mutex);
                if (call->abandoned)
                    return;
                call->begun = true;
            }
            call->task();
        });
        if (answer.wait_for(timeout) != std::future_status::ready) {
            std::lock_guard lock(call->mutex);
            if (!call->begun) {
                call->abandoned = true;
                return std::nullopt;
            }
        }
        return answer.get();
    }
    // Work that must run whatever becomes of its caller; nobody waits for it.
    void post(std::function<void()> work);

private:
    Dispatcher() = default;
    void run_posted();

    std::mutex m_mutex;
    std::deque<std::function<void()>> m_posted;
    UniqueFd m_wake;
    EventLoop::Handle m_watch;
};

} // namespace prewarmd
