#include "dbus/bus.hh"

#include <sys/epoll.h>

#include <poll.h>

#include "dbus/sdbus_compat.hh"

namespace prewarmd {

Result<std::unique_ptr<Bus>> Bus::open(const std::string& address, EventLoop& loop,
                                       std::function<void(const std::string&)> lost) {
    std::unique_ptr<Bus> bus(new Bus);
    bus->m_lost = std::move(lost);
    try {
        bus->m_connection = address.empty() ? sdbus::createSystemBusConnection()
                                            : sdbus::createSessionBusConnectionWithAddress(address);
        bus->m_connection->setMethodCallTimeout(std::chrono::seconds(5));
    } catch (const sdbus::Error& e) {
        return Error{-EIO, (address.empty() ? std::string("the system bus") : address) + ": " +
                               e.getMessage()};
    }
    bus->m_description = address.empty() ? "the system bus" : address;
    auto* raw = bus.get();
    const auto poll = sdbus_compat::poll_data(*bus->m_connection);
    auto watch = loop.watch(
        poll.fd,
        [raw] {
            const auto events = sdbus_compat::poll_data(*raw->m_connection).events;
            uint32_t wanted = 0;
            if (events & POLLIN)
                wanted |= EPOLLIN;
            if (events & POLLOUT)
                wanted |= EPOLLOUT;
            return wanted;
        },
        [raw] { raw->process(); });
    if (!watch)
        return watch.error();
    bus->m_watch = std::move(*watch);
    // sdbus-c++ 2.x wakes an outside loop through a second descriptor as well.
    if (poll.wake_fd >= 0) {
        auto wake = loop.watch(poll.wake_fd, [raw] { raw->process(); });
        if (!wake)
            return wake.error();
        bus->m_wake = std::move(*wake);
    }
    // sd-bus's own deadlines (method call timeouts).
    bus->m_timer =
        loop.timer([raw] { return sdbus_compat::poll_data(*raw->m_connection).deadline; },
                   [raw] { raw->process(); });
    return bus;
}

Bus::~Bus() {
    stop_watching();
}

void Bus::stop_watching() {
    m_watch = {};
    m_wake = {};
    m_timer = {};
}

void Bus::process() {
    try {
        while (sdbus_compat::process_one(*m_connection)) {
        }
    } catch (const sdbus::Error& e) {
        // A handler's own errors went back to its caller: this is the connection's.
        stop_watching();
        if (m_lost)
            m_lost(m_description + ": " + e.getMessage());
    }
}

std::string bus_label(std::string_view text) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    for (const unsigned char c : text) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
            out += static_cast<char>(c);
        } else {
            out += '_';
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out.empty() ? "_" : out;
}

} // namespace prewarmd
