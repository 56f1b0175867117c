#include "api/connection.hh"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <openssl/err.h>

#include "api/router.hh"
#include "base/unique_fd.hh"

namespace prewarmd {
namespace {

std::pair<std::string, int> address_text(const sockaddr_storage& a) {
    char text[INET6_ADDRSTRLEN] = {};
    if (a.ss_family == AF_INET) {
        const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
        ::inet_ntop(AF_INET, &v4.sin_addr, text, sizeof text);
        return {text, ntohs(v4.sin_port)};
    }
    if (a.ss_family == AF_INET6) {
        const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a);
        ::inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof text);
        return {text, ntohs(v6.sin6_port)};
    }
    return {"", 0};
}

// An address as /proc/net/tcp and tcp6 print it: each 32-bit word of the address
// as the machine holds it, in hex, then the port.
std::string proc_net_address(const sockaddr_storage& a) {
    char text[48] = {};
    if (a.ss_family == AF_INET) {
        const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
        std::snprintf(text, sizeof text, "%08X:%04X", v4.sin_addr.s_addr, ntohs(v4.sin_port));
        return text;
    }
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a);
    uint32_t words[4];
    std::memcpy(words, &v6.sin6_addr, sizeof words);
    std::snprintf(text, sizeof text, "%08X%08X%08X%08X:%04X", words[0], words[1], words[2],
                  words[3], ntohs(v6.sin6_port));
    return text;
}

// The owner of the client's socket from /proc/net/tcp (or tcp6), where the kernel's
// socket table cannot be asked over netlink: the line whose local address is our
// peer and whose remote one is us.
std::optional<uid_t> proc_net_peer_uid(const sockaddr_storage& peer,
                                       const sockaddr_storage& local) {
    std::ifstream table(peer.ss_family == AF_INET ? "/proc/net/tcp" : "/proc/net/tcp6");
    const auto client = proc_net_address(peer), server = proc_net_address(local);
    std::string line;
    std::getline(table, line); // the header
    while (std::getline(table, line)) {
        std::istringstream fields(line);
        std::string slot, from, to, state, queues, timer, retransmits;
        uid_t uid = 0;
        if (fields >> slot >> from >> to >> state >> queues >> timer >> retransmits >> uid &&
            from == client && to == server)
            return uid;
    }
    return std::nullopt;
}

} // namespace

std::optional<uid_t> loopback_peer_uid(int fd, std::string& netlink_error) {
    sockaddr_storage peer{}, local{};
    socklen_t peer_length = sizeof peer, local_length = sizeof local;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_length) < 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_length) < 0 ||
        peer.ss_family != local.ss_family ||
        (peer.ss_family != AF_INET && peer.ss_family != AF_INET6))
        return std::nullopt;
    struct {
        nlmsghdr header;
        inet_diag_req_v2 request;
    } message{};
    message.header.nlmsg_len = sizeof message;
    message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    message.header.nlmsg_flags = NLM_F_REQUEST; // one socket, found by its addresses
    auto& r = message.request;
    r.sdiag_family = static_cast<uint8_t>(peer.ss_family);
    r.sdiag_protocol = IPPROTO_TCP;
    r.idiag_states = ~0u;
    // The client's socket: its source is our peer, its destination us.
    auto& id = r.id;
    if (peer.ss_family == AF_INET) {
        const auto& p = reinterpret_cast<const sockaddr_in&>(peer);
        const auto& l = reinterpret_cast<const sockaddr_in&>(local);
        id.idiag_sport = p.sin_port;
        id.idiag_dport = l.sin_port;
        std::memcpy(id.idiag_src, &p.sin_addr, sizeof p.sin_addr);
        std::memcpy(id.idiag_dst, &l.sin_addr, sizeof l.sin_addr);
    } else {
        const auto& p = reinterpret_cast<const sockaddr_in6&>(peer);
        const auto& l = reinterpret_cast<const sockaddr_in6&>(local);
        id.idiag_sport = p.sin6_port;
        id.idiag_dport = l.sin6_port;
        std::memcpy(id.idiag_src, &p.sin6_addr, sizeof p.sin6_addr);
        std::memcpy(id.idiag_dst, &l.sin6_addr, sizeof l.sin6_addr);
    }
    id.idiag_cookie[0] = id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
    const auto cannot_ask = [&](const char* what) {
        netlink_error = std::string("NETLINK_SOCK_DIAG: ") + what + ": " + std::strerror(errno);
        return proc_net_peer_uid(peer, local);
    };
    UniqueFd netlink(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
    if (!netlink)
        return cannot_ask("socket");
    if (::send(netlink.get(), &message, sizeof message, 0) < 0)
        return cannot_ask("send");
    pollfd p{netlink.get(), POLLIN, 0};
    if (::poll(&p, 1, 1000) != 1) {
        errno = errno ? errno : ETIMEDOUT;
        return cannot_ask("no answer in 1 s");
    }
    alignas(nlmsghdr) std::array<char, 8192> answer{};
    const ssize_t n = ::recv(netlink.get(), answer.data(), answer.size(), 0);
    if (n < static_cast<ssize_t>(NLMSG_LENGTH(sizeof(inet_diag_msg))))
        return std::nullopt;
    const auto* h = reinterpret_cast<const nlmsghdr*>(answer.data());
    if (h->nlmsg_len > static_cast<unsigned>(n) || h->nlmsg_type != SOCK_DIAG_BY_FAMILY)
        return std::nullopt;
    const auto* found = reinterpret_cast<const inet_diag_msg*>(answer.data() + NLMSG_LENGTH(0));
    return found->idiag_uid;
}

Peer identify_peer(int fd, WayIn way) {
    Peer peer;
    if (way == WayIn::unix_socket) {
        ucred cred{};
        socklen_t length = sizeof cred;
        if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) == 0)
            peer.pid = cred.pid;
        peer.credentials = socket_credentials(fd);
        if (peer.credentials) {
            peer.key = "uid:" + std::to_string(peer.credentials->uid);
            peer.name = "uid " + std::to_string(peer.credentials->uid);
        } else {
            peer.key = peer.name = "unix:unknown";
        }
        return peer;
    }
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    ::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length);
    const auto ip = address_text(address).first;
    if (way == WayIn::loopback)
        if (const auto uid = loopback_peer_uid(fd, peer.lookup_error)) {
            peer.key = "uid:" + std::to_string(*uid);
            peer.name = "uid " + std::to_string(*uid) + " (" + ip + ")";
            return peer;
        }
    // Not loopback, or its owner not found (gone already): by address. All such
    // loopback clients share one budget, the strictest answer.
    peer.key = peer.name = ip.empty() ? std::string("unknown") : ip;
    return peer;
}

bool PeerBudget::enter(const std::string& key) {
    std::lock_guard lock(m_mutex);
    auto& held = m_held[key];
    if (held.connections >= m_connections)
        return false;
    ++held.connections;
    return true;
}

void PeerBudget::leave(const std::string& key) {
    std::lock_guard lock(m_mutex);
    const auto it = m_held.find(key);
    if (it == m_held.end())
        return;
    if (it->second.connections > 0)
        --it->second.connections;
    if (it->second.connections == 0 && it->second.streams == 0)
        m_held.erase(it); // the map holds only peers with something open
}

bool PeerBudget::start_stream(const std::string& key) {
    std::lock_guard lock(m_mutex);
    auto& held = m_held[key];
    if (held.streams >= m_streams)
        return false;
    ++held.streams;
    return true;
}

void PeerBudget::end_stream(const std::string& key) {
    std::lock_guard lock(m_mutex);
    const auto it = m_held.find(key);
    if (it == m_held.end())
        return;
    if (it->second.streams > 0)
        --it->second.streams;
    if (it->second.connections == 0 && it->second.streams == 0)
        m_held.erase(it);
}

ConnectionStream::ConnectionStream(int fd, SSL* ssl, ConnectionLimits limits,
                                   std::function<bool()> stopping)
    : m_fd(fd), m_ssl(ssl), m_limits(limits), m_stopping(std::move(stopping)) {
    // cpp-httplib 0.11.4 accepts without SOCK_CLOEXEC: set it as early as can be
    // (a child the daemon spawns closes its fds anyway).
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    sockaddr_storage a{};
    socklen_t length = sizeof a;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &length) == 0 &&
        a.ss_family == AF_UNIX) {
        // As cpp-httplib does: a unix socket's peer pid stands for its port.
        ucred cred{};
        socklen_t l = sizeof cred;
        if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &l) == 0)
            m_remote_port = cred.pid;
    } else {
        std::tie(m_remote_ip, m_remote_port) = address_text(a);
    }
    length = sizeof a;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &length) == 0)
        std::tie(m_local_ip, m_local_port) = address_text(a);
    if (m_ssl)
        SSL_set_fd(m_ssl, fd);
}

ConnectionStream::~ConnectionStream() {
    if (m_ssl) {
        SSL_shutdown(m_ssl); // a close_notify, if it goes at once (non-blocking)
        SSL_free(m_ssl);
    }
}

ConnectionStream::Wait ConnectionStream::wait_for(short events, Clock::time_point until) const {
    for (;;) {
        if (m_stopping && m_stopping())
            return Wait::stopped;
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now());
        if (left.count() <= 0)
            return Wait::timed_out;
        // In slices, so that a stopping daemon is not held by a quiet client.
        pollfd p{m_fd, events, 0};
        const int ready = ::poll(&p, 1, static_cast<int>(std::min<long>(left.count(), 100)));
        if (ready > 0)
            return Wait::ready;
        if (ready < 0 && errno != EINTR)
            return Wait::ready; // let the read or write say what is wrong
    }
}

ssize_t ConnectionStream::fill(Clock::time_point until) {
    std::array<char, 4096> chunk;
    for (;;) {
        ssize_t n;
        short want = POLLIN;
        if (m_ssl) {
            ERR_clear_error();
            n = SSL_read(m_ssl, chunk.data(), static_cast<int>(chunk.size()));
            if (n <= 0) {
                const int error = SSL_get_error(m_ssl, static_cast<int>(n));
                if (error == SSL_ERROR_ZERO_RETURN)
                    return 0;
                if (error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE)
                    return -1;
                want = error == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN;
                n = -1;
                errno = EAGAIN;
            }
        } else {
            n = ::recv(m_fd, chunk.data(), chunk.size(), 0);
        }
        if (n >= 0) {
            m_buffer.append(chunk.data(), static_cast<size_t>(n));
            return n;
        }
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return -1;
        if (wait_for(want, until) != Wait::ready)
            return -1;
    }
}

bool ConnectionStream::handshake() {
    const auto until = Clock::now() + m_limits.idle;
    for (;;) {
        ERR_clear_error();
        const int done = SSL_accept(m_ssl);
        if (done == 1)
            return true;
        const int error = SSL_get_error(m_ssl, done);
        if (error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE)
            return false;
        if (wait_for(error == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN, until) != Wait::ready)
            return false;
    }
}

HeadRead ConnectionStream::next_request() {
    if (m_given > 0) { // what the last request left: the next one's first bytes
        m_buffer.erase(0, m_given);
        m_given = 0;
    }
    m_started = false;
    if (m_buffer.empty() && !(m_ssl && SSL_pending(m_ssl) > 0)) {
        switch (wait_for(POLLIN, Clock::now() + m_limits.idle)) {
        case Wait::stopped:
            return HeadRead::stopped;
        case Wait::timed_out:
            return HeadRead::closed; // idle: closed without a word
        case Wait::ready:
            break;
        }
    }
    m_deadline = Clock::now() + m_limits.request;
    size_t scanned = 0;
    for (;;) {
        const auto end = m_buffer.find("\r\n\r\n", scanned);
        const size_t head = end == std::string::npos ? m_buffer.size() : end + 4;
        m_started = m_started || !m_buffer.empty();
        if (std::count(m_buffer.begin(), m_buffer.begin() + static_cast<long>(head), '\n') >
                static_cast<long>(m_limits.head_lines + 1) ||
            std::min(head, m_buffer.size()) > m_limits.head_bytes)
            return HeadRead::too_large;
        if (end != std::string::npos)
            return HeadRead::whole;
        scanned = m_buffer.size() < 3 ? 0 : m_buffer.size() - 3;
        const ssize_t n = fill(m_deadline);
        if (n == 0)
            return HeadRead::closed;
        if (n < 0)
            return m_stopping && m_stopping()   ? HeadRead::stopped
                   : Clock::now() >= m_deadline ? HeadRead::timed_out
                                                : HeadRead::closed;
    }
}

void ConnectionStream::linger() {
    if (!m_ssl)
        ::shutdown(m_fd, SHUT_WR);
    const auto until = Clock::now() + std::chrono::seconds(1);
    size_t dropped = 0;
    while (dropped < (1u << 20)) {
        m_buffer.clear();
        m_given = 0;
        const ssize_t n = fill(until);
        if (n <= 0)
            break;
        dropped += static_cast<size_t>(n);
    }
}

bool ConnectionStream::is_readable() const {
    return m_given < m_buffer.size() || (m_ssl && SSL_pending(m_ssl) > 0) ||
           wait_for(POLLIN, m_deadline) == Wait::ready;
}

bool ConnectionStream::is_writable() const {
    return wait_for(POLLOUT, Clock::now() + m_limits.write) == Wait::ready;
}

ssize_t ConnectionStream::read(char* ptr, size_t size) {
    if (m_given == m_buffer.size()) {
        m_buffer.clear();
        m_given = 0;
        const ssize_t n = fill(m_deadline);
        if (n <= 0)
            return n;
    }
    const size_t n = std::min(size, m_buffer.size() - m_given);
    std::memcpy(ptr, m_buffer.data() + m_given, n);
    m_given += n;
    return static_cast<ssize_t>(n);
}

ssize_t ConnectionStream::write(const char* ptr, size_t size) {
    for (;;) {
        short want = POLLOUT;
        ssize_t n;
        if (m_ssl) {
            ERR_clear_error();
            n = SSL_write(m_ssl, ptr, static_cast<int>(std::min<size_t>(size, 1 << 20)));
            if (n <= 0) {
                const int error = SSL_get_error(m_ssl, static_cast<int>(n));
                if (error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE)
                    return -1;
                want = error == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
                n = -1;
                errno = EAGAIN;
            }
        } else {
            n = ::send(m_fd, ptr, size, MSG_NOSIGNAL);
        }
        if (n >= 0)
            return n;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return -1;
        if (wait_for(want, Clock::now() + m_limits.write) != Wait::ready)
            return -1;
    }
}

void ConnectionStream::get_remote_ip_and_port(std::string& ip, int& port) const {
    ip = m_remote_ip;
    port = m_remote_port;
}

void ConnectionStream::get_local_ip_and_port(std::string& ip, int& port) const {
    ip = m_local_ip;
    port = m_local_port;
}

void refuse_connection(int fd, const std::string& detail) {
    const auto out = problem(Refusal::too_many_connections, detail);
    const std::string text =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: " + out.content_type +
        "\r\nContent-Length: " + std::to_string(out.body.size()) +
        "\r\nRetry-After: 1\r\nConnection: close\r\n\r\n" + out.body;
    [[maybe_unused]] const auto sent =
        ::send(fd, text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

} // namespace prewarmd
