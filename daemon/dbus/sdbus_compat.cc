#include "dbus/sdbus_compat.hh"

#include <cstdint>

namespace prewarmd::sdbus_compat {

// sd-bus's deadlines are absolute CLOCK_MONOTONIC, the steady clock's epoch on Linux.
PollData poll_data(const sdbus::IConnection& connection) {
    const auto raw = connection.getEventLoopPollData();
    PollData out;
    out.fd = raw.fd;
    out.events = raw.events;
#if PREWARMD_SDBUS_MAJOR >= 2
    if (raw.timeout != std::chrono::microseconds::max())
        out.deadline = std::chrono::steady_clock::time_point(raw.timeout);
    out.wake_fd = raw.eventFd;
#else
    if (raw.timeout_usec != UINT64_MAX)
        out.deadline =
            std::chrono::steady_clock::time_point(std::chrono::microseconds(raw.timeout_usec));
#endif
    return out;
}

bool process_one(sdbus::IConnection& connection) {
#if PREWARMD_SDBUS_MAJOR >= 2
    return connection.processPendingEvent();
#else
    return connection.processPendingRequest();
#endif
}

std::unique_ptr<sdbus::IProxy> create_proxy(sdbus::IConnection& connection,
                                            const std::string& service, const std::string& path) {
    return sdbus::createProxy(connection, ServiceName(service), sdbus::ObjectPath(path));
}

void finish_registration([[maybe_unused]] sdbus::IProxy& proxy) {
#if PREWARMD_SDBUS_MAJOR < 2
    proxy.finishRegistration();
#endif
}

std::optional<Caller> current_caller(const sdbus::IObject& object) {
#if PREWARMD_SDBUS_MAJOR >= 2
    const auto message = object.getCurrentlyProcessedMessage();
    if (!message.isValid())
        return std::nullopt;
    return Caller{message.getCredsUid(), message.getCredsGid(),
                  message.getCredsSupplementaryGids()};
#else
    const auto* message = object.getCurrentlyProcessedMessage();
    if (!message)
        return std::nullopt;
    return Caller{message->getCredsUid(), message->getCredsGid(),
                  message->getCredsSupplementaryGids()};
#endif
}

} // namespace prewarmd::sdbus_compat
