#include <doctest/doctest.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <mutex>
#include <thread>

#include "api/server.hh"
#include "api/worker_pool.hh"
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
