#include <doctest/doctest.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <mutex>
#include <thread>

#include "api/connection.hh"
#include "api/listen_fds.hh"
#include "api/server.hh"
#include "api/worker_pool.hh"
#include "base/unique_fd.hh"
#include "fake_api_backend.hh"
#include "temp_dir.hh"

using namespace prewarmd;

TEST_CASE("api server: stopped at once after the start, it stops") {
    // cpp-httplib 0.11.4's stop() is lost on a listener not yet in its accept loop,
    // and the join then waits forever: a SIGTERM right after the daemon started hung
    // it. start() now returns only once every listener runs.
    TempDir dir;
    FakeBackend backend;
    ApiRouter router(backend);
    EventBus events;
    Config config;
    config.api_listen = {"127.0.0.1:0"};
    config.api_socket = dir.file("api.sock");
    config.state_dir = dir.file(""); // where the token is made
    for (int round = 0; round < 50; ++round) {
        auto server = ApiServer::start(config, router, events, [](bool, const std::string&) {});
        REQUIRE_MESSAGE(server.ok(), (server.ok() ? "" : server.error().message));
        auto stopped = std::async(std::launch::async, [&] { (*server)->stop(); });
        if (stopped.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
            // A thread that never returns: report, and end the process, which the
            // future's destructor would otherwise wait for.
            std::fprintf(stderr, "round %d: ApiServer::stop() hangs\n", round);
            std::_Exit(1);
        }
    }
}

TEST_CASE("api server: workers start when work comes and go when it has stopped") {
    WorkerPool pool(3, 2, std::chrono::seconds(1));
    CHECK(pool.threads() == 0); // an idle daemon holds no HTTP worker
    std::mutex mutex;
    std::condition_variable cv;
    int started = 0;
    bool release = false;
    for (int i = 0; i < 5; ++i)
        pool.enqueue([&] {
            std::unique_lock lock(mutex);
            ++started;
            cv.notify_all();
            cv.wait(lock, [&] { return release; });
        });
    {
        std::unique_lock lock(mutex);
        REQUIRE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return started == 3; }));
    }
    CHECK(pool.threads() == 3); // never more than the cap; the other two wait
    // A sixth finds every worker busy and the queue full: it runs at once, on the
    // enqueuing thread, told so, to be refused there.
    std::thread::id ran_on;
    bool overflowing = false;
    pool.enqueue([&] {
        ran_on = std::this_thread::get_id();
        overflowing = WorkerPool::overflowing();
    });
    CHECK(ran_on == std::this_thread::get_id());
    CHECK(overflowing);
    CHECK_FALSE(WorkerPool::overflowing());
    {
        std::lock_guard lock(mutex);
        release = true;
    }
    cv.notify_all();
    for (int i = 0; i < 100 && pool.threads() > 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(started == 5);
    CHECK(pool.threads() == 0); // idle for a second: gone
    pool.shutdown();
}

namespace {

struct Pair {
    UniqueFd client, server;
    Pair() {
        int fds[2];
        REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
        client = UniqueFd(fds[0]);
        server = UniqueFd(fds[1]);
    }
    void send(std::string_view text) const {
        REQUIRE(::send(client.get(), text.data(), text.size(), MSG_NOSIGNAL) ==
                static_cast<ssize_t>(text.size()));
    }
};

ConnectionLimits quick() {
    ConnectionLimits limits;
    limits.request = std::chrono::milliseconds(300);
    limits.idle = std::chrono::milliseconds(300);
    return limits;
}

std::string read_all(ConnectionStream& s, size_t n) {
    std::string out(n, '\0');
    size_t got = 0;
    while (got < n) {
        const auto r = s.read(out.data() + got, n - got);
        REQUIRE(r > 0);
        got += static_cast<size_t>(r);
    }
    return out;
}

} // namespace

TEST_CASE("api connection: a head read whole, in pieces, and the next one after it") {
    Pair p;
    ConnectionStream s(p.server.get(), nullptr, quick(), nullptr);
    std::thread writer([&] {
        p.send("GET /a HTTP/1.1\r\nHo");
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        p.send("st: x\r\n\r\nGET /b HTTP/1.1\r\n\r\n");
    });
    CHECK(s.next_request() == HeadRead::whole);
    writer.join();
    const std::string a = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n", b = "GET /b HTTP/1.1\r\n\r\n";
    CHECK(read_all(s, a.size()) == a);
    CHECK(s.next_request() == HeadRead::whole); // pipelined: already here
    CHECK(read_all(s, b.size()) == b);
    CHECK(s.next_request() == HeadRead::closed); // nothing more within the idle time
}

TEST_CASE("api connection: a head too long or with too many lines is refused before its end") {
    {
        Pair p;
        ConnectionStream s(p.server.get(), nullptr, quick(), nullptr);
        p.send("GET / HTTP/1.1\r\nX: " + std::string(30 * 1024, 'a'));
        CHECK(s.next_request() == HeadRead::too_large);
    }
    {
        Pair p;
        ConnectionStream s(p.server.get(), nullptr, quick(), nullptr);
        std::string head = "GET / HTTP/1.1\r\n";
        for (int i = 0; i < 70; ++i)
            head += "X" + std::to_string(i) + ": y\r\n";
        p.send(head);
        CHECK(s.next_request() == HeadRead::too_large);
    }
}

TEST_CASE("api connection: the deadline counts from the first byte, however it trickles") {
    Pair p;
    ConnectionStream s(p.server.get(), nullptr, quick(), nullptr);
    std::atomic<bool> done{false};
    std::thread trickle([&] {
        p.send("GET / HTTP/1.1\r\n");
        while (!done) {
            ::send(p.client.get(), "X", 1, MSG_NOSIGNAL);
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    });
    CHECK(s.next_request() == HeadRead::timed_out);
    CHECK(s.started());
    done = true;
    trickle.join();
}

TEST_CASE("api connection: a stopping server ends the wait") {
    Pair p;
    ConnectionLimits slow;
    ConnectionStream s(p.server.get(), nullptr, slow, [] { return true; });
    CHECK(s.next_request() == HeadRead::stopped);
}

TEST_CASE("api listen fds: a handed socket is matched to [api] listen by its address") {
    UniqueFd tcp(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(tcp.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    socklen_t size = sizeof address;
    REQUIRE(::getsockname(tcp.get(), reinterpret_cast<sockaddr*>(&address), &size) == 0);
    const auto port = std::to_string(ntohs(address.sin_port));

    CHECK_FALSE(listening_address(tcp.get())); // bound, not listening: systemd never hands that
    REQUIRE(::listen(tcp.get(), 4) == 0);
    CHECK(listening_address(tcp.get()) == "127.0.0.1:" + port);

    UniqueFd udp(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    CHECK_FALSE(listening_address(udp.get()));
    UniqueFd unix_socket(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    CHECK_FALSE(listening_address(unix_socket.get()));

    CHECK(listen_candidates("127.0.0.1:" + port) == std::vector<std::string>{"127.0.0.1:" + port});
    CHECK(listen_candidates("[::1]:7433") == std::vector<std::string>{"[::1]:7433"});
    CHECK(listen_candidates("0.0.0.0:7433") == std::vector<std::string>{"0.0.0.0:7433"});
    const auto local = listen_candidates("localhost:7433");
    CHECK(std::find(local.begin(), local.end(), "127.0.0.1:7433") != local.end());
}
