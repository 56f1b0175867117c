#include "api/access.hh"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cerrno>

namespace prewarmd {

bool Privileged::includes(const Credentials& peer) const {
    if (peer.uid == 0)
        return true;
    if (!gid)
        return false;
    return peer.gid == *gid ||
           std::find(peer.groups.begin(), peer.groups.end(), *gid) != peer.groups.end();
}

namespace {

bool same_name(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

} // namespace

bool loopback_host_allowed(std::string_view host, std::string_view machine_name) {
    if (host.empty())
        return true;
    std::string name;
    if (host.front() == '[') { // [v6]:port
        const auto close = host.find(']');
        if (close == std::string_view::npos)
            return false;
        const auto rest = host.substr(close + 1);
        if (!rest.empty() && rest.front() != ':')
            return false;
        name = std::string(host.substr(1, close - 1));
        in6_addr v6{};
        return ::inet_pton(AF_INET6, name.c_str(), &v6) == 1;
    }
    name = std::string(host.substr(0, host.find(':')));
    if (const auto colon = host.find(':'); colon != std::string_view::npos) {
        const auto port = host.substr(colon + 1);
        if (port.empty() || port.size() > 5 ||
            port.find_first_not_of("0123456789") != std::string_view::npos)
            return false;
    }
    if (name.ends_with('.'))
        name.pop_back();
    in_addr v4{};
    if (::inet_pton(AF_INET, name.c_str(), &v4) == 1)
        return true;
    constexpr std::string_view local = ".localhost";
    if (same_name(name, "localhost") ||
        (name.size() > local.size() &&
         same_name(std::string_view(name).substr(name.size() - local.size()), local)))
        return true;
    return !machine_name.empty() && same_name(name, machine_name);
}

bool loopback_origin_allowed(std::string_view origin, std::string_view machine_name) {
    const auto scheme = origin.find("://");
    if (scheme == std::string_view::npos)
        return false;
    const auto kind = origin.substr(0, scheme);
    if (!same_name(kind, "http") && !same_name(kind, "https"))
        return false;
    const auto host = origin.substr(scheme + 3);
    if (host.empty() || host.find('/') != std::string_view::npos)
        return false;
    return loopback_host_allowed(host, machine_name);
}

AccessDecision decide_access(const AccessRequest& request, const Privileged& privileged,
                             const std::string& token_path) {
    const auto unauthorized = [&](const std::string& what) {
        return AccessDecision{401, what +
                                       " the bearer token (Authorization: Bearer TOKEN; root "
                                       "reads it from " +
                                       token_path + ")"};
    };
    if (request.token == TokenGiven::valid)
        return {};
    switch (request.way) {
    case WayIn::remote:
        return unauthorized(request.token == TokenGiven::wrong ? "wrong token: this needs"
                                                               : "this needs");
    case WayIn::loopback:
        if (!request.changes)
            return {};
        return unauthorized(request.token == TokenGiven::wrong ? "wrong token: a change needs"
                                                               : "a change needs");
    case WayIn::unix_socket:
        if (!request.changes)
            return {};
        if (request.peer && privileged.includes(*request.peer))
            return {};
        if (request.token == TokenGiven::wrong)
            return unauthorized("wrong token: a change from this user needs");
        {
            const std::string who =
                !request.peer ? std::string("the peer is unknown")
                              : "uid " + std::to_string(request.peer->uid) + " is neither";
            return AccessDecision{
                403, "changes over the socket are for root" +
                         (privileged.gid ? " and the group " + privileged.name : std::string()) +
                         " (" + who + "), or need the bearer token"};
        }
    }
    return AccessDecision{403, "refused"};
}

std::optional<Credentials> socket_credentials(int fd) {
    ucred cred{};
    socklen_t length = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) < 0)
        return std::nullopt;
    Credentials c{cred.uid, cred.gid, {}};
    std::vector<gid_t> groups(64);
    length = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    int got = ::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &length);
    if (got < 0 && errno == ERANGE) { // length now says how much is needed
        groups.resize(length / sizeof(gid_t));
        got = ::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &length);
    }
    if (got < 0)
        return std::nullopt; // without the groups, a member of the group could not be told
    groups.resize(length / sizeof(gid_t));
    c.groups = std::move(groups);
    return c;
}

bool RefusalLog::first_in_a_while(const std::string& peer, Clock::time_point now) {
    std::lock_guard lock(m_mutex);
    if (m_last.size() > 1024)
        m_last.clear();
    auto [it, fresh] = m_last.try_emplace(peer, now);
    if (fresh)
        return true;
    if (now - it->second < std::chrono::minutes(1))
        return false;
    it->second = now;
    return true;
}

} // namespace prewarmd
