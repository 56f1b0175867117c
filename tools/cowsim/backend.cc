#include "backend.hh"

#include <thread>

namespace cowsim {

__extension__ using uint128 = unsigned __int128;

Backend::Backend(const BackendConfig& config)
    : m_config(config), m_capacity_bytes(config.capacity_bytes) {}

Backend::Op::Op(Backend& backend) : m_backend(backend) {
    m_backend.acquire_slot();
    m_started = Clock::now();
}

Backend::Op::~Op() {
    m_backend.release_slot();
}

void Backend::Op::finish(uint64_t bytes, std::chrono::nanoseconds latency) {
    const auto transferred = m_backend.reserve_link(m_started, bytes);
    std::this_thread::sleep_until(transferred + latency);
}

bool Backend::try_allocate(uint64_t bytes) {
    uint64_t used = m_used_bytes.load();
    do {
        const uint64_t capacity = m_capacity_bytes.load();
        if (capacity != 0 && used + bytes > capacity)
            return false;
    } while (!m_used_bytes.compare_exchange_weak(used, used + bytes));
    return true;
}

void Backend::acquire_slot() {
    if (m_config.concurrency == 0)
        return;
    std::unique_lock lock(m_slots_mutex);
    m_slots_freed.wait(lock, [&] { return m_slots_in_use < m_config.concurrency; });
    ++m_slots_in_use;
}

void Backend::release_slot() {
    if (m_config.concurrency == 0)
        return;
    {
        std::lock_guard lock(m_slots_mutex);
        --m_slots_in_use;
    }
    m_slots_freed.notify_one();
}

// The link carries one transfer at a time at the configured bandwidth: a transfer
// starts when both it and the link are ready, and ends bytes/bandwidth later.
Clock::time_point Backend::reserve_link(Clock::time_point start, uint64_t bytes) {
    if (m_config.bandwidth_bytes_per_s == 0 || bytes == 0)
        return start;
    const auto duration = std::chrono::nanoseconds(static_cast<int64_t>(
        static_cast<uint128>(bytes) * 1'000'000'000 / m_config.bandwidth_bytes_per_s));
    std::lock_guard lock(m_link_mutex);
    const auto begin = std::max(start, m_link_free_at);
    m_link_free_at = begin + duration;
    return m_link_free_at;
}

} // namespace cowsim
