#include "api/events.hh"

namespace prewarmd {

void EventBus::publish(std::string type, std::string data) {
    {
        std::lock_guard lock(m_mutex);
        m_events.push_back({m_next_id++, std::move(type), std::move(data)});
        if (m_events.size() > 256)
            m_events.pop_front();
    }
    m_published.notify_all();
}

std::vector<EventBus::Event> EventBus::wait_after(uint64_t after,
                                                  std::chrono::milliseconds timeout) {
    std::unique_lock lock(m_mutex);
    m_published.wait_for(lock, timeout, [&] {
        return m_closed || (!m_events.empty() && m_events.back().id > after);
    });
    std::vector<Event> out;
    for (const auto& e : m_events)
        if (e.id > after)
            out.push_back(e);
    return out;
}

uint64_t EventBus::last_id() const {
    std::lock_guard lock(m_mutex);
    return m_next_id - 1;
}

void EventBus::close() {
    {
        std::lock_guard lock(m_mutex);
        m_closed = true;
    }
    m_published.notify_all();
}

bool EventBus::closed() const {
    std::lock_guard lock(m_mutex);
    return m_closed;
}

} // namespace prewarmd
