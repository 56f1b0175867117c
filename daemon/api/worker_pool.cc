#include "api/worker_pool.hh"

namespace prewarmd {
namespace {

thread_local bool t_overflowing = false;

} // namespace

bool WorkerPool::overflowing() {
    return t_overflowing;
}

WorkerPool::~WorkerPool() {
    shutdown();
}

WorkerPool::Enqueued WorkerPool::enqueue(std::function<void()> fn) {
    take(std::move(fn));
    return static_cast<Enqueued>(true); // taken (nothing, where the answer is void)
}

void WorkerPool::take(std::function<void()> fn) {
    std::unique_lock lock(m_mutex);
    join_done();
    if (m_workers.size() >= m_max && m_jobs.size() >= m_queue + (m_workers.size() - m_busy)) {
        lock.unlock();
        t_overflowing = true;
        fn();
        t_overflowing = false;
        return;
    }
    m_jobs.push_back(std::move(fn));
    if (m_waiting >= m_jobs.size() || m_workers.size() >= m_max) {
        m_wake.notify_one();
        return;
    }
    auto& worker = m_workers.emplace_back();
    worker.thread = std::thread([this, &worker] { work(worker); });
}

void WorkerPool::shutdown() {
    std::list<Worker> workers;
    {
        std::lock_guard lock(m_mutex);
        m_shutdown = true;
        workers.swap(m_workers);
    }
    m_wake.notify_all();
    for (auto& w : workers)
        if (w.thread.joinable())
            w.thread.join();
}

size_t WorkerPool::threads() const {
    std::lock_guard lock(m_mutex);
    size_t running = 0;
    for (const auto& w : m_workers)
        running += !w.done;
    return running;
}

// Threads that ended are joined by the next enqueue (a thread cannot join itself).
void WorkerPool::join_done() {
    for (auto it = m_workers.begin(); it != m_workers.end();) {
        if (it->done) {
            it->thread.join();
            it = m_workers.erase(it);
        } else {
            ++it;
        }
    }
}

void WorkerPool::work(Worker& self) {
    std::unique_lock lock(m_mutex);
    for (;;) {
        ++m_waiting;
        const bool woken =
            m_wake.wait_for(lock, m_idle, [&] { return !m_jobs.empty() || m_shutdown; });
        --m_waiting;
        if (m_jobs.empty()) {
            if (m_shutdown || !woken)
                break; // stopping, or idle long enough
            continue;
        }
        auto job = std::move(m_jobs.front());
        m_jobs.pop_front();
        ++m_busy;
        lock.unlock();
        job();
        lock.lock();
        --m_busy;
    }
    self.done = true;
}

} // namespace prewarmd
