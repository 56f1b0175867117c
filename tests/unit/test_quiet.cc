#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "measurement/quiet.hh"

using namespace prewarmd;
using namespace std::chrono_literals;

TEST_CASE("a probe's hold starts once the jobs' I/O in flight has finished") {
    ProbeQuiet quiet;
    int job = 0;
    quiet.set_busy(&job, true);
    std::atomic<bool> holding{false};
    std::thread probe([&] {
        const ProbeQuiet::Hold hold(quiet, 10s);
        holding = true;
        CHECK(quiet.busy() == 0);
    });
    for (int i = 0; i < 100 && !quiet.held(); ++i)
        std::this_thread::sleep_for(1ms);
    CHECK(quiet.held()); // new I/O waits from the start
    std::this_thread::sleep_for(50ms);
    CHECK_FALSE(holding); // the I/O in flight is not done
    quiet.set_busy(&job, false);
    probe.join();
    CHECK(holding);
    CHECK_FALSE(quiet.held());
}

TEST_CASE("a job that stays busy delays a probe's hold by the drain time only") {
    ProbeQuiet quiet;
    int job = 0;
    quiet.set_busy(&job, true);
    {
        const ProbeQuiet::Hold hold(quiet, 20ms);
        CHECK(quiet.held());
        CHECK(quiet.busy() == 1);
    }
    CHECK_FALSE(quiet.held());
}

TEST_CASE("one probe at a time; a hold within a hold on one thread does nothing more") {
    ProbeQuiet quiet;
    std::atomic<bool> second{false};
    std::thread other;
    {
        const ProbeQuiet::Hold outer(quiet);
        {
            const ProbeQuiet::Hold inner(quiet);
        }
        CHECK(quiet.held()); // the inner one's end leaves the outer hold
        other = std::thread([&] {
            const ProbeQuiet::Hold hold(quiet);
            second = true;
        });
        std::this_thread::sleep_for(50ms);
        CHECK_FALSE(second);
    }
    other.join();
    CHECK(second);
}
