#include "discovery/xenstore.hh"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "base/unique_fd.hh"

namespace prewarmd {
namespace {

// xen/include/public/io/xs_wire.h
struct Header {
    uint32_t type;
    uint32_t req_id;
    uint32_t tx_id;
    uint32_t len;
};
constexpr uint32_t xs_read = 2;
constexpr uint32_t max_value = 4096;

} // namespace

std::optional<std::string> xenstore_read(const std::string& path) {
    if (path.empty() || path.size() > max_value)
        return std::nullopt;
    UniqueFd fd(::open("/dev/xen/xenbus", O_RDWR | O_CLOEXEC | O_NONBLOCK));
    if (!fd)
        return std::nullopt;
    const Header ask{xs_read, 1, 0, static_cast<uint32_t>(path.size() + 1)};
    std::string message(reinterpret_cast<const char*>(&ask), sizeof ask);
    message += path;
    message.push_back('\0');
    if (::write(fd.get(), message.data(), message.size()) != static_cast<ssize_t>(message.size()))
        return std::nullopt;
    std::string reply;
    Header answer{};
    char buffer[sizeof(Header) + max_value];
    while (reply.size() < sizeof answer || reply.size() < sizeof answer + answer.len) {
        pollfd p{fd.get(), POLLIN, 0};
        if (::poll(&p, 1, 1000) <= 0)
            return std::nullopt;
        const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
        if (n <= 0)
            return std::nullopt;
        reply.append(buffer, static_cast<size_t>(n));
        if (reply.size() >= sizeof answer) {
            std::memcpy(&answer, reply.data(), sizeof answer);
            if (answer.len > max_value)
                return std::nullopt;
        }
    }
    // An error (XS_ERROR, "ENOENT") or another request's answer: no value.
    if (answer.type != xs_read || answer.req_id != ask.req_id)
        return std::nullopt;
    return reply.substr(sizeof answer, answer.len);
}

bool names_xen_volume(const DiskInfo& disk) {
    return disk.parent_subsystem == "xen" &&
           disk.parent_attribute("nodename").rfind("device/vbd/", 0) == 0; // device/vbd/51728
}

std::string xen_volume(const DiskInfo& disk) {
    if (!names_xen_volume(disk))
        return "";
    const auto frontend = disk.parent_attribute("nodename");
    const auto backend = xenstore_read(frontend + "/backend");
    if (!backend || backend->empty())
        return "";
    std::string volume;
    if (const auto params = xenstore_read(*backend + "/params"); params && !params->empty())
        volume = "params=" + *params;
    if (const auto vdi = xenstore_read(*backend + "/sm-data/vdi-uuid"); vdi && !vdi->empty())
        volume += (volume.empty() ? "" : " ") + std::string("vdi-uuid=") + *vdi;
    return volume;
}

} // namespace prewarmd
