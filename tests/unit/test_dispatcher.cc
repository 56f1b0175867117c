// Work handed to the event loop from other threads: answered, or never run.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "base/dispatcher.hh"
#include "base/event_loop.hh"

using namespace prewarmd;
using namespace std::chrono_literals;

namespace {

// Runs the loop on the calling thread for `how_long`.
void run_for(EventLoop& loop, std::chrono::milliseconds how_long) {
    const auto until = Clock::now() + how_long;
    auto stop = loop.timer([until] { return std::optional<Clock::time_point>(until); },
                           [&loop] { loop.quit(); });
    REQUIRE(loop.run().ok());
}

} // namespace

TEST_CASE("a call the loop answers in time gives its answer") {
    auto loop = EventLoop::create();
    REQUIRE(loop.ok());
    auto dispatcher = Dispatcher::create(**loop);
    REQUIRE(dispatcher.ok());
    std::optional<int> answer;
    std::thread caller([&] { answer = (*dispatcher)->call([] { return 42; }, 5s); });
    run_for(**loop, 200ms);
    caller.join();
    CHECK(answer == 42);
}

TEST_CASE("a call that timed out is never run: an answer of busy changes nothing later") {
    auto loop = EventLoop::create();
    REQUIRE(loop.ok());
    auto dispatcher = Dispatcher::create(**loop);
    REQUIRE(dispatcher.ok());
    std::atomic<bool> ran{false};
    // The loop is stuck (not running) for longer than the caller waits.
    const auto answer = (*dispatcher)->call([&] { return ran = true; }, 20ms);
    CHECK_FALSE(answer.has_value());
    run_for(**loop, 100ms);
    CHECK_FALSE(ran);

    // Posted work runs whoever waits.
    (*dispatcher)->post([&] { ran = true; });
    run_for(**loop, 100ms);
    CHECK(ran);
}
