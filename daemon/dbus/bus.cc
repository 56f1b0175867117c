#include "dbus/bus.hh"

#include <sys/epoll.h>

#include <poll.h>

#include <sdbus-c++/Error.h>

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
    auto watch = loop.watch(
        bus->m_connection->getEventLoopPollData().fd,
        [raw] {
            const auto events = raw->m_connection->getEventLoopPollData().events;
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
    // sd-bus's own deadlines (method call timeouts): absolute CLOCK_MONOTONIC, the
    // steady clock's epoch on Linux.
    bus->m_timer = loop.timer(
        [raw]() -> std::optional<Clock::time_point> {
            const auto usec = raw->m_connection->getEventLoopPollData().timeout_usec;
            if (usec == UINT64_MAX)
                return std::nullopt;
            return Clock::time_point(std::chrono::microseconds(usec));
        },
        [raw] { raw->process(); });
    return bus;
}

Bus::~Bus() {
    m_watch = {};
    m_timer = {};
}

void Bus::process() {
    try {
        while (m_connection->processPendingRequest()) {
        }
    } catch (const sdbus::Error& e) {
        // A handler's own errors went back to its caller: this is the connection's.
        m_watch = {};
        m_timer = {};
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
