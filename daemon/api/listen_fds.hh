// The listening sockets systemd hands over (prewarmd.socket, sd_listen_fds): systemd
// binds them at boot and keeps them while the daemon restarts, so no other program
// can take the API's port in between, and a client that connects then waits in the
// backlog instead of being refused (docs/security.md).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace prewarmd {

struct HandedSocket {
    int fd = -1;         // close-on-exec; the caller owns it
    std::string address; // "IP:PORT", "[IPv6]:PORT"; "" when it is not a TCP listener
};

// The sockets systemd passed to this process (none when it was not started by a
// socket unit), once: the environment that names them is cleared.
std::vector<HandedSocket> take_handed_sockets();

// The address a socket is bound to, in the form above; nullopt for anything but a
// listening TCP socket.
std::optional<std::string> listening_address(int fd);

// An [api] listen entry, "HOST:PORT" or "[IPv6]:PORT", as host and port.
std::pair<std::string, int> split_listen_address(const std::string& address);

// The addresses an [api] listen entry ("HOST:PORT") binds, in the same form: one for
// a numeric host, each of a name's (as "localhost" resolves).
std::vector<std::string> listen_candidates(const std::string& address);

} // namespace prewarmd
