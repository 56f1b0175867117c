// Who may read and who may change, over each way into the HTTP API: the privilege
// model of docs/security.md as one decision, asked for every request.
//
//   way in             read                  change
//   unix socket        whoever may connect   root, the group; else the token
//   TCP loopback       anyone                the token
//   TCP, not loopback  the token             the token
//
// A TCP peer cannot be told apart from any other local user; a unix socket's peer
// can, by the credentials the kernel fixed when it connected (SO_PEERCRED).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.hh"

namespace prewarmd {

enum class WayIn { unix_socket, loopback, remote };
enum class TokenGiven { none, valid, wrong };

struct Credentials {
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups; // supplementary
};

// Besides root, the group whose members may change things (none: root only).
struct Privileged {
    std::optional<gid_t> gid;
    std::string name; // for messages

    bool includes(const Credentials& peer) const;
};

struct AccessRequest {
    WayIn way = WayIn::loopback;
    bool changes = false; // any method but GET and HEAD
    TokenGiven token = TokenGiven::none;
    // The unix socket's peer, as the kernel fixed it when it connected (none: unknown).
    std::optional<Credentials> peer;
};

struct AccessDecision {
    int status = 0; // 0: allowed; 401 (the token is missing or wrong); 403 (the peer may not)
    std::string detail;
};

AccessDecision decide_access(const AccessRequest& request, const Privileged& privileged,
                             const std::string& token_path);

// The credentials of the peer of the unix socket connection `fd` (SO_PEERCRED,
// SO_PEERGROUPS: fixed when the peer connected, unlike /proc/PID, whose pid may
// belong to another process by now). None when the kernel does not say.
std::optional<Credentials> socket_credentials(int fd);

// Whether a loopback request's Host, or its Origin, names this machine: an IP
// address, localhost (or NAME.localhost), or `machine_name` (gethostname), with
// any port. Any other name could be a DNS name pointed at 127.0.0.1 by whoever
// owns it, which lets a page in a browser on the VM read what loopback serves
// to anyone (DNS rebinding); a missing Host (HTTP/1.0) is no browser's. Origin:
// scheme://host[:port]; "null" and anything else is refused.
bool loopback_host_allowed(std::string_view host, std::string_view machine_name);
bool loopback_origin_allowed(std::string_view origin, std::string_view machine_name);

// Refused changes are logged once per peer and minute.
class RefusalLog {
public:
    bool first_in_a_while(const std::string& peer, Clock::time_point now);

private:
    std::mutex m_mutex;
    std::map<std::string, Clock::time_point> m_last;
};

} // namespace prewarmd
