// The HTTP workers of one listener: at most `max` threads, started when a
// connection comes and none is free, gone after a while without work, so an idle
// daemon holds none (cpp-httplib's own pool starts all of them at once, for good).
// At most `queue` connections wait for a worker; past that, a connection's job runs
// at once on the accepting thread with overflowing() true, to be refused there
// without waiting (cpp-httplib 0.11.4 accepts without limit, and a queue that grows
// holds a file descriptor for each).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <thread>
#include <utility>

#include <httplib.h>

namespace prewarmd {

class WorkerPool final : public httplib::TaskQueue {
public:
    WorkerPool(size_t max, size_t queue, std::chrono::seconds idle = std::chrono::seconds(30))
        : m_max(max), m_queue(queue), m_idle(idle) {}
    ~WorkerPool() override;

    // cpp-httplib 0.11 returns nothing, 0.18 whether the job was taken: it always
    // is, and waits for a worker, on both.
    using Enqueued = decltype(std::declval<httplib::TaskQueue&>().enqueue({}));
    Enqueued enqueue(std::function<void()> fn) override;
    void shutdown() override;

    size_t threads() const;
    // Whether the job running on this thread is one the pool had no room for.
    static bool overflowing();

private:
    struct Worker {
        std::thread thread;
        bool done = false;
    };
    void take(std::function<void()> fn);
    void work(Worker& self);
    void join_done(); // with the lock held

    const size_t m_max;
    const size_t m_queue;
    const std::chrono::seconds m_idle;
    mutable std::mutex m_mutex;
    std::condition_variable m_wake;
    std::deque<std::function<void()>> m_jobs;
    std::list<Worker> m_workers;
    size_t m_waiting = 0; // workers free for the next job
    size_t m_busy = 0;    // workers running a job
    bool m_shutdown = false;
};

} // namespace prewarmd
