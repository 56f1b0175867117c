// The daemon's jobs keep still while one of them probes. A probe's verdict is a
// timing, and the I/O of the others would be in it: 8 jobs at once on one cowsim
// left 4 to 11 of 64 disks "unproven" where every block was allocated, their zero
// writes or controls slowed by the others' writes (tests/e2e/many_disks.sh,
// 2026-12-07). Noise in a timing may as well read as zeros kept: a false "warm".
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>

namespace prewarmd {

class ProbeQuiet {
public:
    // For a probe, while it lives: other probes wait for it, and the jobs' new I/O
    // waits too. It starts once the jobs' I/O in flight has finished, or after
    // `drain` (a job stuck in a slow backend must not stop every proof). On a thread
    // that holds already, it does nothing more.
    class Hold {
    public:
        explicit Hold(ProbeQuiet& quiet,
                      std::chrono::milliseconds drain = std::chrono::milliseconds(2000));
        ~Hold();
        Hold(const Hold&) = delete;
        Hold& operator=(const Hold&) = delete;

    private:
        ProbeQuiet& m_quiet;
        bool m_outer;
    };

    // For a job: its new I/O waits while this is true.
    bool held() const { return m_held.load(std::memory_order_acquire); }
    // For a job, as it changes: whether it has I/O in flight.
    void set_busy(const void* job, bool busy);
    // The jobs with I/O in flight.
    size_t busy() const;

    static ProbeQuiet& process();

private:
    std::mutex m_probe_mutex; // one probe at a time
    std::atomic<bool> m_held{false};
    mutable std::mutex m_mutex;
    std::condition_variable m_idle;
    std::set<const void*> m_busy;
};

} // namespace prewarmd
