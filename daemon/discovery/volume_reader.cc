#include "discovery/volume_reader.hh"

namespace prewarmd {

VolumeReader::VolumeReader(Read read, Post post, std::chrono::milliseconds within)
    : m_read(std::move(read)), m_post(std::move(post)), m_within(within),
      m_thread([this] { run(); }) {}

VolumeReader::~VolumeReader() {
    {
        std::lock_guard lock(m_mutex);
        m_stopping = true;
    }
    m_wake.notify_one();
    m_thread.join();
}

void VolumeReader::read(DiskInfo disk, Done done) {
    {
        std::lock_guard lock(m_mutex);
        m_queue.push_back(
            {std::move(disk), std::move(done), std::chrono::steady_clock::now() + m_within});
    }
    m_wake.notify_one();
}

void VolumeReader::run() {
    std::unique_lock lock(m_mutex);
    for (;;) {
        m_wake.wait(lock, [this] { return m_stopping || !m_queue.empty(); });
        if (m_stopping)
            return;
        Ask ask = std::move(m_queue.front());
        m_queue.pop_front();
        lock.unlock();
        if (std::chrono::steady_clock::now() < ask.by)
            ask.disk.volume = m_read(ask.disk);
        m_post([ask = std::move(ask)]() mutable { ask.done(std::move(ask.disk)); });
        lock.lock();
    }
}

} // namespace prewarmd
