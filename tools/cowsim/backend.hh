// The storage repository behind all disks of one cowsim process: a shared link
// bandwidth, a limit on concurrent operations, a capacity, and latencies.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace cowsim {

using Clock = std::chrono::steady_clock;

struct BackendConfig {
    uint64_t bandwidth_bytes_per_s = 0; // 0: unlimited
    unsigned concurrency = 0;           // 0: unlimited
    uint64_t capacity_bytes = 0;        // 0: unlimited
    std::chrono::nanoseconds alloc_latency = std::chrono::milliseconds(1);
    std::chrono::nanoseconds sync_latency = std::chrono::milliseconds(2);
    // Where a block's allocation happens: false, the whole block crosses the link
    // (a backend that ships blocks, as blktap's VHD over NFS); true, on the storage
    // host, so the link carries only the write's own bytes (qcow2 with fallocate,
    // LVM thin, Ceph RBD objects).
    bool host_allocation = false;
};

class Backend {
public:
    explicit Backend(const BackendConfig& config);

    // One operation on the backend: holds a concurrency slot while it lives. finish()
    // charges its bytes on the shared link and its latency, and sleeps until the
    // simulated operation would have completed.
    class Op {
    public:
        explicit Op(Backend& backend);
        ~Op();
        Op(const Op&) = delete;
        Op& operator=(const Op&) = delete;
        void finish(uint64_t bytes, std::chrono::nanoseconds latency);

    private:
        Backend& m_backend;
        Clock::time_point m_started;
    };

    // Takes `bytes` of capacity for a new allocation; false when the backend is full.
    bool try_allocate(uint64_t bytes);
    // Gives back an allocation whose write failed.
    void release_allocation(uint64_t bytes) { m_used_bytes -= bytes; }
    // Counts space that was allocated before this process started.
    void account_existing(uint64_t bytes) { m_used_bytes += bytes; }

    void set_capacity(uint64_t bytes) { m_capacity_bytes = bytes; }
    uint64_t capacity_bytes() const { return m_capacity_bytes; }
    uint64_t used_bytes() const { return m_used_bytes; }
    const BackendConfig& config() const { return m_config; }

private:
    void acquire_slot();
    void release_slot();
    Clock::time_point reserve_link(Clock::time_point start, uint64_t bytes);

    const BackendConfig m_config;
    std::atomic<uint64_t> m_capacity_bytes;
    std::atomic<uint64_t> m_used_bytes{0};

    std::mutex m_slots_mutex;
    std::condition_variable m_slots_freed;
    unsigned m_slots_in_use = 0;

    std::mutex m_link_mutex;
    Clock::time_point m_link_free_at{};
};

} // namespace cowsim
