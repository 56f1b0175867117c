// A D-Bus connection driven by the daemon's event loop: its handlers, signals and
// replies run on the loop's thread, like everything else that touches the scheduler.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <sdbus-c++/IConnection.h>

#include "base/event_loop.hh"
#include "base/result.hh"

namespace prewarmd {

class Bus {
public:
    // `address` "" is the system bus. Calls made from the loop give up after 5 s.
    // Should the connection break (the bus daemon went away), it stops being
    // watched and `lost` says why, once.
    static Result<std::unique_ptr<Bus>> open(const std::string& address, EventLoop& loop,
                                             std::function<void(const std::string&)> lost);
    ~Bus();

    sdbus::IConnection& connection() { return *m_connection; }
    std::string description() const { return m_description; }

private:
    Bus() = default;
    void process();
    void stop_watching();

    std::unique_ptr<sdbus::IConnection> m_connection;
    std::string m_description;
    std::function<void(const std::string&)> m_lost;
    EventLoop::Handle m_watch;
    EventLoop::Handle m_wake;
    EventLoop::Handle m_timer;
};

// An object path label for any text: letters and digits kept, every other byte
// "_" and two hex digits (as systemd's bus_label_escape).
std::string bus_label(std::string_view text);

} // namespace prewarmd
