// sdbus-c++ 1.2 (Debian 12) and 2.x (Debian 13) behind one face: the names, calls
// and callback types that differ between the two, and nothing else. The rest of
// the D-Bus code uses these and never asks which version it was built with; the
// build says it in PREWARMD_SDBUS_MAJOR.
//
// What 2.x changed that matters here: strong types for names (InterfaceName,
// PropertyName, ServiceName, Error::Name, explicit from text), proxies without
// finishRegistration(), processPendingRequest() renamed processPendingEvent(), a
// second descriptor an outside event loop must watch (PollData::eventFd), the
// message being handled by value instead of a pointer, and an async call's error
// as std::optional instead of a pointer.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <sdbus-c++/sdbus-c++.h>

#ifndef PREWARMD_SDBUS_MAJOR
#error "PREWARMD_SDBUS_MAJOR: the build says which sdbus-c++ it found (daemon/CMakeLists.txt)"
#endif

namespace prewarmd::sdbus_compat {

#if PREWARMD_SDBUS_MAJOR >= 2
using InterfaceName = sdbus::InterfaceName;
using PropertyName = sdbus::PropertyName;
using ServiceName = sdbus::ServiceName;
using ErrorName = sdbus::Error::Name;
// An async call's error in its reply callback: empty, or the error.
using ReplyError = std::optional<sdbus::Error>;
#else
using InterfaceName = std::string;
using PropertyName = std::string;
using ServiceName = std::string;
using ErrorName = std::string;
using ReplyError = const sdbus::Error*;
#endif

// Names of one kind from plain text: names<PropertyName>("A", "B").
template <typename Name, typename... Text>
std::vector<Name> names(const Text&... text) {
    return {Name(text)...};
}

inline sdbus::Error error(const std::string& name, const std::string& message) {
    return sdbus::Error(ErrorName(name), message);
}

// What an outside event loop watches: `fd` for `events` (poll(2) bits) until
// `deadline` (none: no timeout), and `wake_fd` for reading where there is one.
struct PollData {
    int fd = -1;
    short events = 0;
    std::optional<std::chrono::steady_clock::time_point> deadline;
    int wake_fd = -1;
};
PollData poll_data(const sdbus::IConnection& connection);

// Handles one pending event; false when none was pending (then poll again).
bool process_one(sdbus::IConnection& connection);

std::unique_ptr<sdbus::IProxy> create_proxy(sdbus::IConnection& connection,
                                            const std::string& service, const std::string& path);

// After its signal handlers: 1.x registers them here, 2.x already did.
void finish_registration(sdbus::IProxy& proxy);

// Who sent the method call being handled on `object`, if one is.
struct Caller {
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups;
};
std::optional<Caller> current_caller(const sdbus::IObject& object);

} // namespace prewarmd::sdbus_compat
