// One client connection of the HTTP API, read and written by prewarmd rather than
// by cpp-httplib, so that what a client can make the daemon hold is bounded. The
// library (0.11.4 and 0.18) grows a header line without limit, applies its read
// timeout to each read rather than to a request, and accepts without limit; here
//   - a request's head (request line and headers) is read whole, within a size and
//     a line cap, before the library parses a byte of it;
//   - the head and the body must arrive within one deadline from the first byte;
//   - a connection that sends nothing is closed after the idle time;
//   - who the peer is comes from the kernel: the unix socket's credentials, and
//     on loopback the owner of the client's socket (sock_diag), so that each local
//     user has a budget of connections, event streams and requests of its own.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include <httplib.h>
#include <openssl/ssl.h>

#include "api/access.hh"
#include "base/clock.hh"

namespace prewarmd {

struct ConnectionLimits {
    size_t head_bytes = 24 * 1024;           // request line and headers together
    size_t head_lines = 65;                  // the request line and 64 headers
    std::chrono::milliseconds request{5000}; // a request, head and body, from its first byte
    std::chrono::milliseconds idle{5000};    // for a request's first byte
    std::chrono::milliseconds write{5000};   // for one write to make progress
};

// Who is at the other end of an accepted connection.
struct Peer {
    std::string key;  // whose budget: "uid:1000", or the address ("10.0.0.5") where no uid is known
    std::string name; // for the log: "uid 1000", "10.0.0.5"
    std::optional<Credentials> credentials; // the unix socket's, fixed when it connected
    pid_t pid = 0;                          // the unix socket's
    std::string lookup_error; // loopback: why the kernel's socket table could not be asked
};

// The peer of the accepted socket `fd` that came in by `way`.
Peer identify_peer(int fd, WayIn way);

// The owner of the client's socket of the loopback TCP connection `fd`, from the
// kernel's socket table (NETLINK_SOCK_DIAG, one exact lookup): the uid of whoever
// made that socket, which no header and no port number can pretend. Where netlink
// cannot be asked (`netlink_error` says why), /proc/net/tcp and tcp6 say the same.
std::optional<uid_t> loopback_peer_uid(int fd, std::string& netlink_error);

// How many connections and event streams each peer holds, across the listeners.
class PeerBudget {
public:
    PeerBudget(size_t connections, size_t streams)
        : m_connections(connections), m_streams(streams) {}
    bool enter(const std::string& key);
    void leave(const std::string& key);
    bool start_stream(const std::string& key);
    void end_stream(const std::string& key);
    size_t connections_per_peer() const { return m_connections; }
    size_t streams_per_peer() const { return m_streams; }

private:
    struct Held {
        size_t connections = 0;
        size_t streams = 0;
    };
    const size_t m_connections, m_streams;
    std::mutex m_mutex;
    std::map<std::string, Held> m_held;
};

enum class HeadRead { whole, closed, too_large, timed_out, stopped };

// The socket `fd` (made non-blocking here) and, on a TLS listener, its SSL session
// (owned: freed with the stream). `stopping` is asked while it waits.
class ConnectionStream final : public httplib::Stream {
public:
    ConnectionStream(int fd, SSL* ssl, ConnectionLimits limits, std::function<bool()> stopping);
    ~ConnectionStream() override;
    ConnectionStream(const ConnectionStream&) = delete;
    ConnectionStream& operator=(const ConnectionStream&) = delete;

    // The TLS handshake, within the idle time.
    bool handshake();
    // Waits for the next request's first byte, at most the idle time, then reads
    // its head whole within the request's deadline, which its body shares.
    HeadRead next_request();
    // Whether the client asked for anything before its head was cut short.
    bool started() const { return m_started; }
    // After a refusal written mid-request: no more writes, and what the client still
    // sends is read and dropped for a moment (at most 1 s and 1 MiB), so that the
    // close does not reset the connection before the client has read the refusal.
    void linger();

    bool is_readable() const override;
    bool is_writable() const override;
    ssize_t read(char* ptr, size_t size) override;
    ssize_t write(const char* ptr, size_t size) override;
    void get_remote_ip_and_port(std::string& ip, int& port) const override;
    void get_local_ip_and_port(std::string& ip, int& port) const override;
    socket_t socket() const override { return m_fd; }

private:
    enum class Wait { ready, timed_out, stopped };
    Wait wait_for(short events, Clock::time_point until) const;
    ssize_t fill(Clock::time_point until); // one read from the socket into the buffer

    const int m_fd;
    SSL* const m_ssl;
    const ConnectionLimits m_limits;
    const std::function<bool()> m_stopping;
    std::string m_buffer; // read from the socket, not yet given to the library
    size_t m_given = 0;   // of m_buffer
    Clock::time_point m_deadline;
    bool m_started = false;
    std::string m_remote_ip, m_local_ip;
    int m_remote_port = 0, m_local_port = 0;
};

// A short answer written straight to `fd`, once, without waiting (the connection is
// refused before a worker would serve it): 503 with Retry-After and the problem.
void refuse_connection(int fd, const std::string& detail);

} // namespace prewarmd
