#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <future>

#include "api/server.hh"
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
