#include "api/server.hh"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include <httplib.h>
#include <openssl/ssl.h>

#include "api/access.hh"
#include "api/connection.hh"
#include "api/listen_fds.hh"
#include "api/token.hh"
#include "api/worker_pool.hh"
#include "base/clock.hh"
#include "base/unique_fd.hh"

namespace prewarmd {
namespace {

constexpr int max_streams = 8;

// The peer of the connection this thread serves: set by BoundedServer while it
// serves one, read by the guard. cpp-httplib serves a request on the thread that
// read it and tells a handler nothing of its connection but the addresses.
thread_local const Peer* t_peer = nullptr;

// Requests per second per peer (api/connection.hh: a uid where the kernel tells
// it): a token bucket each, burst twice the rate.
class RateLimiter {
public:
    explicit RateLimiter(unsigned per_second) : m_rate(per_second) {}
    bool allow(const std::string& client) {
        const auto now = Clock::now();
        std::lock_guard lock(m_mutex);
        if (m_buckets.size() > 4096)
            m_buckets.clear(); // a flood of addresses: start over rather than grow
        auto [it, fresh] = m_buckets.try_emplace(client, Bucket{2.0 * m_rate, now});
        auto& b = it->second;
        if (!fresh) {
            const double seconds = std::chrono::duration<double>(now - b.last).count();
            b.tokens = std::min(2.0 * m_rate, b.tokens + seconds * m_rate);
            b.last = now;
        }
        if (b.tokens < 1)
            return false;
        b.tokens -= 1;
        return true;
    }

private:
    struct Bucket {
        double tokens;
        Clock::time_point last;
    };
    const double m_rate;
    std::mutex m_mutex;
    std::unordered_map<std::string, Bucket> m_buckets;
};

void apply(httplib::Response& res, const ApiResponse& out) {
    res.status = out.status;
    for (const auto& [name, value] : out.headers)
        res.set_header(name, value);
    res.set_content(out.body, out.content_type);
}

} // namespace

Result<void> check_api_config(const Config& config) {
    if (!config.api_token_file.empty())
        if (auto token = load_token(config.api_token_file); !token)
            return token.error();
    const bool cert = !config.api_tls_cert.empty(), key = !config.api_tls_key.empty();
    if (cert != key)
        return Error{-EINVAL, "[api] tls_cert and tls_key go together"};
    if (cert) {
        std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_server_method()),
                                                              SSL_CTX_free);
        if (!ctx ||
            SSL_CTX_use_certificate_chain_file(ctx.get(), config.api_tls_cert.c_str()) != 1 ||
            SSL_CTX_use_PrivateKey_file(ctx.get(), config.api_tls_key.c_str(), SSL_FILETYPE_PEM) !=
                1 ||
            SSL_CTX_check_private_key(ctx.get()) != 1)
            return Error{-EINVAL, "[api] tls_cert " + config.api_tls_cert + " or tls_key " +
                                      config.api_tls_key + " cannot be loaded, or do not match"};
    }
    return {};
}

bool is_loopback_address(const std::string& address) {
    const auto host = split_listen_address(address).first;
    if (host == "localhost" || host == "::1")
        return true;
    in_addr v4{};
    return ::inet_pton(AF_INET, host.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

// What the listener asks of its server's accept loop (BoundedServer's).
class AcceptLoop {
public:
    virtual ~AcceptLoop() = default;
    // The loop accepts on a copy of `socket`: cpp-httplib closes its socket when an
    // accept fails with anything but EMFILE (ENFILE, ENOBUFS, ENOMEM...), and the
    // listener goes on with a new copy, its own socket still listening.
    virtual Result<void> arm(int socket) = 0;
    // Ends the loop within its idle interval (200 ms). cpp-httplib's stop() would
    // shut the socket down, which ends the listening for systemd too.
    virtual void stop_accepting() = 0;
    // Closes the copy, unless the library did.
    virtual void disarm(bool closed_by_library) = 0;
    // The socket bind_to_port made.
    virtual int bound_socket() const = 0;
};

struct Listener {
    std::string name; // for the log: "127.0.0.1:7433", "unix:/run/prewarmd/api.sock"
    WayIn way = WayIn::loopback;
    std::unique_ptr<httplib::Server> server;
    AcceptLoop* loop = nullptr; // the server's
    int handed = -1; // the listening socket systemd holds (api/listen_fds.hh), if any
    int socket = -1; // the one listened on: systemd's, or the one bound; ours to close
    std::thread thread;
};

struct ApiServer::Impl {
    Impl(ApiRouter& r, EventBus& e, Log l, unsigned rate, unsigned connections)
        : router(r), events(e), log(std::move(l)), limiter(rate), machine_name(host_name()),
          max_connections(connections), budget(std::max(1u, connections / 4), 2) {}

    static std::string host_name() {
        char name[256] = {};
        return ::gethostname(name, sizeof name - 1) == 0 ? name : "";
    }

    ApiRouter& router;
    EventBus& events;
    Log log;
    RateLimiter limiter;
    const std::string machine_name; // a Host that loopback requests may name
    mutable std::mutex token_mutex; // a reload replaces the token and the group
    std::string token_file;
    std::optional<TokenDigest> token; // none: a reload found no good token, and none works
    Privileged privileged;
    RefusalLog refusals;
    const unsigned max_connections; // workers per listener
    ConnectionLimits limits;
    // Per peer, across the listeners: a quarter of a listener's workers (1 at
    // least: at max_connections 2 to 7, 2 would be half of them or all), and two
    // event streams, so that one local user cannot take them all.
    PeerBudget budget;
    std::atomic<int> streams{0};
    std::atomic<bool> stopping{false};
    std::atomic<bool> lookup_error_said{false}; // the socket table could not be asked
    std::string socket_path;
    std::vector<std::unique_ptr<Listener>> listeners;

    // The token (made at the first start when none is configured) and the group
    // that may change things over the socket. At the start and on every reload.
    Result<void> load_access(const Config& config) {
        const auto path = token_path(config.api_token_file, config.state_dir);
        if (config.api_token_file.empty()) {
            auto made = make_token_if_missing(path);
            if (!made)
                return made.error();
            if (*made)
                log(false, "api: made a token for changes over TCP in " + path +
                               " (readable by root only)");
        }
        auto digest = load_token(path);
        if (!digest) {
            // A rotation that failed must not leave the old token working: whoever
            // rotated it meant it out.
            std::lock_guard lock(token_mutex);
            token.reset();
            return digest.error();
        }
        Privileged group;
        if (!config.api_socket_group.empty()) {
            if (const struct group* g = ::getgrnam(config.api_socket_group.c_str())) {
                group.gid = g->gr_gid;
                group.name = config.api_socket_group;
            } else {
                log(true, "api: socket_group " + config.api_socket_group +
                              ": no such group: only root may change things over the socket");
            }
        }
        std::lock_guard lock(token_mutex);
        token_file = path;
        token = *digest;
        privileged = group;
        return {};
    }

    // The privilege model (api/access.hh), for this request on this listener.
    AccessDecision access(const Listener& l, const httplib::Request& req) {
        AccessRequest request;
        request.way = l.way;
        // Whether it changes anything is the route's to say; an unknown one counts
        // as a change unless it is a read.
        const auto* route = ApiRouter::find(req.method, req.path);
        request.changes = route ? route->changes : req.method != "GET" && req.method != "HEAD";
        Privileged group;
        std::string file;
        {
            std::lock_guard lock(token_mutex);
            if (req.has_header("Authorization"))
                request.token =
                    token && bearer_matches(req.get_header_value("Authorization"), *token)
                        ? TokenGiven::valid
                        : TokenGiven::wrong;
            group = privileged;
            file = token_file;
        }
        if (l.way == WayIn::unix_socket)
            request.peer = t_peer->credentials;
        auto decision = decide_access(request, group, file);
        if (decision.status && request.changes) {
            if (refusals.first_in_a_while(t_peer->key + " " + l.name, Clock::now()))
                log(true, "api: refused " + req.method + " " + req.path + " from " + t_peer->name +
                              " on " + l.name + ": " + decision.detail +
                              " (logged once a minute per peer)");
        }
        return decision;
    }

    // Before any body is read: what the library does not bound, this does.
    httplib::Server::HandlerResponse guard(const Listener& l, const httplib::Request& req,
                                           httplib::Response& res) {
        const auto refuse = [&](ApiResponse out) {
            out.headers.emplace_back("Connection", "close"); // an unread body may follow
            apply(res, out);
            return httplib::Server::HandlerResponse::Handled;
        };
        if (req.has_header("Transfer-Encoding"))
            return refuse(problem(Refusal::transfer_encoding, "send a body with one Content-Length"));
        if (req.has_header("Content-Encoding"))
            return refuse(problem(Refusal::content_encoding, "send the body as it is"));
        const auto lengths = req.get_header_value_count("Content-Length");
        if (lengths > 1)
            return refuse(
                problem(Refusal::content_length, "one Content-Length only"));
        if (lengths == 1) {
            const auto text = req.get_header_value("Content-Length");
            uint64_t length = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), length);
            if (ec != std::errc{} || end != text.data() + text.size() || text.empty())
                return refuse(problem(Refusal::content_length, "Content-Length is not a number"));
            if (length > api_max_body_bytes)
                return refuse(problem(Refusal::body_too_large, "a body may hold at most 65536 bytes"));
        }
        if (req.get_header_value_count("Authorization") > 1)
            return refuse(problem(Refusal::authorization, "one Authorization header only"));
        if (l.way == WayIn::loopback) {
            const auto hosts = req.get_header_value_count("Host");
            const auto host = req.get_header_value("Host");
            if (hosts > 1 || !loopback_host_allowed(host, machine_name))
                return refuse(problem(Refusal::misdirected, "Host " + host.substr(0, 100) +
                                          " names no address of this machine: over loopback, "
                                          "name localhost, an IP address or " +
                                          machine_name));
            if (req.has_header("Origin") &&
                !loopback_origin_allowed(req.get_header_value("Origin"), machine_name))
                return refuse(problem(Refusal::cross_origin, "a page from another origin may not use this API"));
        }
        // The kernel's word on the peer (a header is never trusted for this).
        if (!limiter.allow(t_peer->key)) {
            auto out = problem(Refusal::too_many_requests, "slow down: at most the configured rate per second");
            out.headers.emplace_back("Retry-After", "1");
            return refuse(out);
        }
        if (const auto decision = access(l, req); decision.status) {
            auto out = decision.status == 401
                           ? problem(Refusal::unauthorized, decision.detail)
                           : problem(Refusal::forbidden, decision.detail);
            if (decision.status == 401)
                out.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"prewarmd\"");
            return refuse(out);
        }
        // Without Content-Length or Transfer-Encoding a request has no body (RFC 9112
        // 6.3); cpp-httplib would read one until the read timeout and answer 400.
        if (lengths == 0 && req.method != "GET" && req.method != "HEAD") {
            serve(req, res);
            return httplib::Server::HandlerResponse::Handled;
        }
        return httplib::Server::HandlerResponse::Unhandled;
    }

    void serve(const httplib::Request& req, httplib::Response& res) {
        ApiRequest request;
        request.method = req.method == "HEAD" ? "GET" : req.method;
        request.path = req.path;
        request.content_type = req.get_header_value("Content-Type");
        request.body = req.body;
        const auto out = router.handle(request);
        if (!out.event_stream) {
            apply(res, out);
            return;
        }
        if (streams.fetch_add(1) >= max_streams) {
            --streams;
            apply(res, problem(Refusal::too_many_streams, "at most 8 clients follow the events at once"));
            return;
        }
        if (!budget.start_stream(t_peer->key)) {
            --streams;
            apply(res, problem(Refusal::too_many_streams, "at most " + std::to_string(budget.streams_per_peer()) +
                                   " event streams per client at once"));
            return;
        }
        uint64_t last = events.last_id();
        if (const auto from = req.get_header_value("Last-Event-ID"); !from.empty())
            std::from_chars(from.data(), from.data() + from.size(), last);
        res.set_header("Cache-Control", "no-store");
        res.set_chunked_content_provider(
            "text/event-stream",
            [this, last, quiet = 0](size_t, httplib::DataSink& sink) mutable {
                if (stopping || events.closed()) {
                    sink.done();
                    return true;
                }
                const auto batch = events.wait_after(last, std::chrono::seconds(1));
                for (const auto& e : batch) {
                    const auto text = "id: " + std::to_string(e.id) + "\nevent: " + e.type +
                                      "\ndata: " + e.data + "\n\n";
                    if (!sink.write(text.data(), text.size()))
                        return false;
                    last = e.id;
                }
                if (batch.empty() && ++quiet >= 15) {
                    quiet = 0;
                    static constexpr std::string_view ping = ": keep-alive\n\n";
                    return sink.write(ping.data(), ping.size());
                }
                return true;
            },
            [this, key = t_peer->key](bool) {
                budget.end_stream(key);
                --streams;
            });
    }
};

ApiServer::ApiServer(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}

ApiServer::~ApiServer() {
    stop();
}

namespace {

// The socket's group, for connecting: the packaged unit's Group= makes it so from
// the start, since its sandbox forbids chown (no CAP_CHOWN, @privileged filtered
// out). Where it is not so and cannot be made so, fewer may connect than
// socket_group says, never more: a warning, not a failure.
void set_socket_group(const std::string& path, const Privileged& group, const ApiServer::Log& log) {
    struct stat st {};
    if (!group.gid || (::stat(path.c_str(), &st) == 0 && st.st_gid == *group.gid))
        return;
    if (::chown(path.c_str(), static_cast<uid_t>(-1), *group.gid) == 0)
        return;
    const struct group* now = ::getgrgid(st.st_gid);
    log(true, "api: socket " + path + ": cannot give it to the group " + group.name + " (" +
                  std::strerror(errno) + "): only root and the group " +
                  (now ? now->gr_name : std::to_string(st.st_gid)) +
                  " may connect (under systemd, set Group=" + group.name + " in a drop-in)");
}

void write_problem(httplib::Stream& strm, const ApiResponse& out, std::string_view reason) {
    const std::string text = "HTTP/1.1 " + std::to_string(out.status) + " " + std::string(reason) +
                             "\r\nContent-Type: " + out.content_type +
                             "\r\nContent-Length: " + std::to_string(out.body.size()) +
                             "\r\nConnection: close\r\n\r\n" + out.body;
    [[maybe_unused]] const auto written = strm.write(text.data(), text.size());
}

// A cpp-httplib server (Base: Server or SSLServer) whose connections prewarmd reads
// itself (api/connection.hh), within the peer's budget, handing each whole request
// head to the library's own parser (process_request, which both releases keep
// protected). It replaces the library's process_and_close_socket, which both call
// for every accepted connection.
template <class Base>
class BoundedServer final : public Base, public AcceptLoop {
public:
    template <class... Args>
    BoundedServer(ApiServer::Impl& impl, const Listener& l, Args&&... args)
        : Base(std::forward<Args>(args)...), m_impl(impl), m_listener(l) {
        // The accept loop looks at svr_sock_ this often: how stop_accepting ends it.
        this->set_idle_interval(0, 200'000);
    }

    Result<void> arm(int socket) override {
        const int copy = ::fcntl(socket, F_DUPFD_CLOEXEC, 3);
        if (copy < 0)
            return errno_error("[api] " + m_listener.name + ": a copy of its socket");
        m_copy = copy;
        this->svr_sock_ = copy;
        return {};
    }
    void stop_accepting() override { this->svr_sock_ = INVALID_SOCKET; }
    void disarm(bool closed_by_library) override {
        if (m_copy >= 0 && !closed_by_library)
            ::close(m_copy);
        m_copy = -1;
    }
    int bound_socket() const override { return this->svr_sock_; }

private:
    static constexpr bool tls = std::is_base_of_v<httplib::SSLServer, Base>;

    bool process_and_close_socket(socket_t sock) override {
        if (WorkerPool::overflowing()) {
            if (!tls)
                refuse_connection(sock, "all " + std::to_string(m_impl.max_connections) +
                                            " workers of " + m_listener.name +
                                            " are busy and as many wait: try again");
        } else {
            const Peer peer = identify_peer(sock, m_listener.way);
            if (!peer.lookup_error.empty() && !m_impl.lookup_error_said.exchange(true))
                m_impl.log(true, "api: " + peer.lookup_error + ": loopback clients are told " +
                                     "apart by /proc/net/tcp instead (said once)");
            const bool root = peer.key == "uid:0";
            if (!root && m_others.fetch_add(1) >= others_at_most()) {
                if (!tls)
                    refuse_connection(sock, "the other clients hold " +
                                                std::to_string(others_at_most()) + " of the " +
                                                std::to_string(m_impl.max_connections) +
                                                " workers of " + m_listener.name +
                                                ": the rest are root's; try again");
            } else if (m_impl.budget.enter(peer.key)) {
                serve(sock, peer);
                m_impl.budget.leave(peer.key);
            } else if (!tls) {
                refuse_connection(sock, "at most " +
                                            std::to_string(m_impl.budget.connections_per_peer()) +
                                            " connections per client at once");
            }
            if (!root)
                --m_others;
        }
        ::shutdown(sock, SHUT_RDWR);
        ::close(sock);
        return true;
    }

    void serve(int sock, const Peer& peer) {
        SSL* ssl = nullptr;
        if constexpr (tls)
            if (!(ssl = SSL_new(this->ssl_context())))
                return;
        ConnectionStream strm(sock, ssl, m_impl.limits,
                              [this] { return this->svr_sock_ == INVALID_SOCKET; });
        if (ssl && !strm.handshake())
            return;
        t_peer = &peer;
        for (auto count = this->keep_alive_max_count_; count > 0; --count) {
            const auto head = strm.next_request();
            if (head == HeadRead::too_large) {
                write_problem(strm,
                              problem(Refusal::headers_too_large, "at most " + std::to_string(m_impl.limits.head_lines - 1) +
                                          " headers, and " +
                                          std::to_string(m_impl.limits.head_bytes / 1024) +
                                          " KiB with the request line"),
                              "Request Header Fields Too Large");
                strm.linger();
                break;
            }
            if (head == HeadRead::timed_out && strm.started()) {
                write_problem(strm,
                              problem(Refusal::request_timeout, "a request must arrive whole within " +
                                          std::to_string(m_impl.limits.request.count() / 1000) +
                                          " s of its first byte"),
                              "Request Timeout");
                strm.linger();
            }
            if (head != HeadRead::whole)
                break;
            bool closed = false;
            if (!request(strm, count == 1, closed) || closed)
                break;
        }
        t_peer = nullptr;
    }

    // cpp-httplib 0.18 takes the addresses as arguments; 0.11.4 asks the stream.
    bool request(ConnectionStream& strm, bool close, bool& closed) {
        if constexpr (requires { this->process_request(strm, close, closed, nullptr); }) {
            return this->process_request(strm, close, closed, nullptr);
        } else {
            std::string remote, local;
            int remote_port = 0, local_port = 0;
            strm.get_remote_ip_and_port(remote, remote_port);
            strm.get_local_ip_and_port(local, local_port);
            return this->process_request(strm, remote, remote_port, local, local_port, close,
                                         closed, nullptr);
        }
    }

    // Root's reserve: however many other clients come, together they hold all the
    // workers but an eighth (1 at least), so that root (over the socket or
    // loopback) always finds one. docs/security.md, "Budgets".
    size_t others_at_most() const {
        return m_impl.max_connections - std::max(1u, m_impl.max_connections / 8);
    }

    ApiServer::Impl& m_impl;
    const Listener& m_listener;
    int m_copy = -1;                  // what the accept loop accepts on
    std::atomic<size_t> m_others{0}; // the connections of clients other than root, held
};

Result<void> configure(ApiServer::Impl& impl, Listener& l) {
    auto& s = *l.server;
    const unsigned workers = impl.max_connections;
    s.new_task_queue = [workers] { return new WorkerPool(workers, workers); };
    s.set_payload_max_length(api_max_body_bytes);
    // Deadlines and caps are BoundedServer's (impl.limits), not the library's.
    s.set_keep_alive_max_count(100);
    // The headers and the body go out in two writes: without this, Nagle holds the
    // body for the client's delayed ACK, 40 ms a keep-alive request.
    s.set_tcp_nodelay(true);
    s.set_pre_routing_handler([&impl, &l](const httplib::Request& req, httplib::Response& res) {
        return impl.guard(l, req, res);
    });
    const auto handler = [&impl](const httplib::Request& req, httplib::Response& res) {
        impl.serve(req, res);
    };
    // One pattern per route (no catch-all): an id is one segment (the router checks
    // it); a bounded repetition such as {1,512} cost std::regex megabytes each.
    std::vector<std::string> patterns;
    for (const auto& route : ApiRouter::routes()) {
        std::string pattern(route.path);
        if (const auto at = pattern.find("{id}"); at != std::string::npos)
            pattern.replace(at, 4, "[^/]+"); // the router checks the id (200 at most)
        if (std::find(patterns.begin(), patterns.end(), pattern) != patterns.end())
            continue;
        patterns.push_back(pattern);
        s.Get(pattern, handler);
        s.Post(pattern, handler);
        s.Put(pattern, handler);
        s.Patch(pattern, handler);
        s.Delete(pattern, handler);
        s.Options(pattern, handler);
    }
    s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty())
            return;
        const auto out = res.status == 404
                             ? problem(Refusal::no_route, "no such route: " + req.path)
                             : problem(Refusal::http,
                                       "the request could not be taken (HTTP " +
                                           std::to_string(res.status) + ")",
                                       res.status);
        apply(res, out);
    });
    s.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
            apply(res, problem(Refusal::internal, "the request failed"));
        });
    return {};
}

// A socket file left by a daemon that died is removed; one in use is not.
Result<void> clear_stale_socket(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) < 0)
        return {};
    if (!S_ISSOCK(st.st_mode))
        return Error{-EEXIST, "[api] socket " + path + " exists and is not a socket"};
    UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
    if (::connect(probe.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0)
        return Error{-EADDRINUSE, "[api] socket " + path + " is in use by another program"};
    ::unlink(path.c_str());
    return {};
}

// A listener's thread: cpp-httplib's accept loop, again after an accept that
// failed for good (the library then closed its copy of the socket and returned
// false); listen_after_bind() returns true once stop_accepting() ended it.
void accept_loop(ApiServer::Impl& impl, Listener& l) {
    while (!l.server->listen_after_bind()) {
        const int err = errno;
        l.loop->disarm(true);
        if (impl.stopping)
            return;
        impl.log(true, "api: " + l.name + ": an accept failed (" + std::strerror(err) +
                           "): listening again in 1 s");
        for (int i = 0; i < 10 && !impl.stopping; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (impl.stopping)
            return;
        if (auto armed = l.loop->arm(l.socket); !armed) {
            impl.log(true, "api: " + armed.error().message + ": " + l.name + " is not served");
            return;
        }
    }
    l.loop->disarm(false);
}

} // namespace

Result<std::unique_ptr<ApiServer>> ApiServer::start(const Config& config, ApiRouter& router,
                                                    EventBus& events, Log log) {
    auto impl = std::make_unique<Impl>(router, events, log, config.api_rate_limit,
                                       config.api_max_connections);
    if (auto checked = check_api_config(config); !checked)
        return checked.error();
    if (auto access = impl->load_access(config); !access)
        return access.error();
    const bool tls = !config.api_tls_cert.empty();
    auto handed = take_handed_sockets();

    for (const auto& address : config.api_listen) {
        auto l = std::make_unique<Listener>();
        l->name = address + (tls ? " (TLS)" : "");
        l->way = is_loopback_address(address) ? WayIn::loopback : WayIn::remote;
        const auto candidates = listen_candidates(address);
        // One socket per entry, as bind_to_port binds one: any other is said below.
        const auto match = std::find_if(handed.begin(), handed.end(), [&](const HandedSocket& h) {
            return h.fd >= 0 &&
                   std::find(candidates.begin(), candidates.end(), h.address) != candidates.end();
        });
        if (match != handed.end())
            l->handed = std::exchange(match->fd, -1);
        if (tls) {
            auto server = std::make_unique<BoundedServer<httplib::SSLServer>>(
                *impl, *l, config.api_tls_cert.c_str(), config.api_tls_key.c_str());
            if (!server->is_valid())
                return Error{-EINVAL, "[api] tls_cert " + config.api_tls_cert + " or tls_key " +
                                          config.api_tls_key + " cannot be loaded"};
            SSL_CTX_set_min_proto_version(server->ssl_context(), TLS1_2_VERSION);
            l->loop = server.get();
            l->server = std::move(server);
        } else {
            auto server = std::make_unique<BoundedServer<httplib::Server>>(*impl, *l);
            l->loop = server.get();
            l->server = std::move(server);
        }
        if (l->way == WayIn::remote && !tls)
            log(true, "api: " + address +
                          " is not loopback and has no TLS: the token travels in clear; put a "
                          "TLS-terminating proxy in front");
        if (auto ok = configure(*impl, *l); !ok)
            return ok.error();
        const auto [host, port] = split_listen_address(address);
        if (l->handed < 0 && !l->server->bind_to_port(host, port))
            return Error{-EADDRINUSE, "[api] listen " + address +
                                          ": cannot bind (in use, or no "
                                          "such address)"};
        l->socket = l->handed >= 0 ? l->handed : l->loop->bound_socket();
        if (auto armed = l->loop->arm(l->socket); !armed)
            return armed.error();
        impl->listeners.push_back(std::move(l));
    }
    if (!config.api_socket.empty()) {
        if (auto ok = clear_stale_socket(config.api_socket); !ok)
            return ok.error();
        ::mkdir(std::string(config.api_socket.substr(0, config.api_socket.rfind('/'))).c_str(),
                0755);
        auto l = std::make_unique<Listener>();
        l->name = "unix:" + config.api_socket;
        l->way = WayIn::unix_socket;
        auto server = std::make_unique<BoundedServer<httplib::Server>>(*impl, *l);
        l->loop = server.get();
        l->server = std::move(server);
        l->server->set_address_family(AF_UNIX);
        if (auto ok = configure(*impl, *l); !ok)
            return ok.error();
        if (!l->server->bind_to_port(config.api_socket, 80))
            return Error{-EADDRINUSE, "[api] socket " + config.api_socket + ": cannot bind"};
        l->socket = l->loop->bound_socket();
        if (auto armed = l->loop->arm(l->socket); !armed)
            return armed.error();
        impl->socket_path = config.api_socket;
        if (::chmod(config.api_socket.c_str(), config.api_socket_mode) < 0)
            return errno_error("[api] socket " + config.api_socket + ": chmod");
        set_socket_group(config.api_socket, impl->privileged, log);
        impl->listeners.push_back(std::move(l));
    }
    for (auto& l : impl->listeners) {
        auto* server = l->server.get();
        l->thread = std::thread([impl = impl.get(), l = l.get()] { accept_loop(*impl, *l); });
        // cpp-httplib's stop() does nothing until the thread is in its accept loop,
        // and then the join would wait forever: a SIGTERM right after start hung.
        const auto until = Clock::now() + std::chrono::seconds(5);
        while (!server->is_running() && Clock::now() < until)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (!server->is_running()) {
            l->thread.detach(); // the daemon exits on this error
            return Error{-EIO, "[api] " + l->name + ": the listener did not start"};
        }
        log(false,
            "api: listening on " + l->name + (l->handed >= 0 ? " (the socket systemd holds)" : ""));
    }
    for (const auto& h : handed) {
        if (h.fd < 0)
            continue;
        log(true, "api: systemd passed a socket " +
                      (h.address.empty() ? std::string("that is no TCP listener")
                                         : "on " + h.address + " that [api] listen does not name") +
                      ": not served (prewarmd.socket and [api] listen should agree)");
        ::close(h.fd);
    }
    return std::unique_ptr<ApiServer>(new ApiServer(std::move(impl)));
}

Result<void> ApiServer::reload_access(const Config& config) {
    return m_impl->load_access(config);
}

void ApiServer::stop() {
    if (!m_impl || m_impl->stopping.exchange(true))
        return;
    m_impl->events.close();
    for (auto& l : m_impl->listeners)
        l->loop->stop_accepting();
    for (auto& l : m_impl->listeners) {
        if (l->thread.joinable())
            l->thread.join();
        if (l->socket >= 0)
            ::close(std::exchange(l->socket, -1));
        l->handed = -1;
    }
    if (!m_impl->socket_path.empty())
        ::unlink(m_impl->socket_path.c_str());
}

} // namespace prewarmd
