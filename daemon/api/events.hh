// The events the API streams (GET /v1/events): disks added and removed, state
// changes, progress. The daemon's thread publishes; each stream waits on its own
// thread and never longer than a second, so closing the bus ends them all.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace prewarmd {

class EventBus {
public:
    struct Event {
        uint64_t id = 0;
        std::string type; // disk_added, disk_removed, state_changed, progress
        std::string data; // JSON
    };

    void publish(std::string type, std::string data);
    // Events after `after` (up to the last 256), waiting up to `timeout` for one.
    std::vector<Event> wait_after(uint64_t after, std::chrono::milliseconds timeout);
    uint64_t last_id() const;
    void close();
    bool closed() const;

private:
    mutable std::mutex m_mutex;
    std::condition_variable m_published;
    std::deque<Event> m_events;
    uint64_t m_next_id = 1;
    bool m_closed = false;
};

} // namespace prewarmd
