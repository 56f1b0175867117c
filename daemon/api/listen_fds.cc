#include "api/listen_fds.hh"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <charconv>

#include <systemd/sd-daemon.h>

namespace prewarmd {
namespace {

std::string format_address(const sockaddr* address) {
    char text[INET6_ADDRSTRLEN] = {};
    if (address->sa_family == AF_INET) {
        const auto* in = reinterpret_cast<const sockaddr_in*>(address);
        ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
        return std::string(text) + ":" + std::to_string(ntohs(in->sin_port));
    }
    if (address->sa_family == AF_INET6) {
        const auto* in6 = reinterpret_cast<const sockaddr_in6*>(address);
        ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
        return "[" + std::string(text) + "]:" + std::to_string(ntohs(in6->sin6_port));
    }
    return "";
}

} // namespace

std::vector<HandedSocket> take_handed_sockets() {
    std::vector<HandedSocket> out;
    const int count = ::sd_listen_fds(1); // marks them close-on-exec
    for (int i = 0; i < count; ++i) {
        const int fd = SD_LISTEN_FDS_START + i;
        out.push_back({fd, listening_address(fd).value_or("")});
    }
    return out;
}

std::optional<std::string> listening_address(int fd) {
    int type = 0, listening = 0;
    socklen_t size = sizeof type;
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) < 0 || type != SOCK_STREAM)
        return std::nullopt;
    size = sizeof listening;
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) < 0 || !listening)
        return std::nullopt;
    sockaddr_storage address{};
    size = sizeof address;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) < 0)
        return std::nullopt;
    auto text = format_address(reinterpret_cast<const sockaddr*>(&address));
    if (text.empty())
        return std::nullopt;
    return text;
}

std::pair<std::string, int> split_listen_address(const std::string& address) {
    const auto colon = address.rfind(':');
    std::string host = address.substr(0, colon);
    if (host.size() > 1 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    int port = 0;
    const auto text = address.substr(colon + 1);
    std::from_chars(text.data(), text.data() + text.size(), port);
    return {host, port};
}

std::vector<std::string> listen_candidates(const std::string& address) {
    const auto [host, port] = split_listen_address(address);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    std::vector<std::string> out;
    if (::getaddrinfo(host.empty() ? nullptr : host.c_str(), std::to_string(port).c_str(), &hints,
                      &found) != 0)
        return out;
    for (const auto* ai = found; ai; ai = ai->ai_next)
        if (auto text = format_address(ai->ai_addr); !text.empty())
            out.push_back(std::move(text));
    ::freeaddrinfo(found);
    return out;
}

} // namespace prewarmd
