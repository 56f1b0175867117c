#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "scheduler/adaptive.hh"

using namespace prewarmd;

namespace {

std::map<std::string, DiskLoad> one(double latency_s, uint64_t ios = 1000) {
    return {{"xvda", DiskLoad{ios, latency_s, 0.5}}};
}

// Runs the controller for `n` intervals against `latency(t, applied)`: the other
// disk's latency in interval t while the jobs ran at the factor applied. Returns
// the factors applied, one per interval.
template <typename Latency>
std::vector<double> run(BackoffController& c, int n, Latency latency, int t0 = 0) {
    std::vector<double> applied;
    for (int t = t0; t < t0 + n; ++t) {
        applied.push_back(c.factor());
        c.update(one(latency(t, c.factor())));
    }
    return applied;
}

double mean(const std::vector<double>& v, size_t from = 0) {
    double sum = 0;
    for (size_t i = from; i < v.size(); ++i)
        sum += v[i];
    return sum / static_cast<double>(v.size() - from);
}

} // namespace

TEST_CASE("diskstats: ios, their time and busy time; our disks and their partitions left out") {
    const auto before =
        parse_diskstats(" 202       0 xvda 100 0 800 50 200 0 1600 150 0 180 200 0 0 0 0\n"
                        " 202      16 xvdb 10 0 80 5 20 0 160 15 0 18 20\n"
                        " 202      17 xvdb1 1 0 8 1 2 0 16 1 0 2 2\n"
                        "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0\n"
                        "garbage\n");
    REQUIRE(before.size() == 4);
    CHECK(before.at("xvda").ios == 300);
    CHECK(before.at("xvda").io_ms == 200);
    CHECK(before.at("xvda").busy_ms == 180);
    const auto after = parse_diskstats(" 202 0 xvda 200 0 0 150 300 0 0 250 0 680 0\n"
                                       " 202 16 xvdb 99 0 0 99 99 0 0 99 0 99 99\n"
                                       " 202 17 xvdb1 9 0 0 9 9 0 0 9 0 9 9\n"
                                       " 7 0 loop0 0 0 0 0 0 0 0 0 0 0 0\n");
    const auto loads = loads_between(before, after, 1.0, {"xvdb"});
    CHECK(loads.count("xvdb") == 0);
    CHECK(loads.count("xvdb1") == 0);
    REQUIRE(loads.count("xvda"));
    CHECK(loads.at("xvda").ios == 200);
    CHECK(loads.at("xvda").latency_s == doctest::Approx(0.001)); // 200 ms over 200 I/Os
    CHECK(loads.at("xvda").utilisation == doctest::Approx(0.5));
    CHECK(loads.at("loop0").ios == 0);
}

TEST_CASE("adaptive: full speed, and no quiet windows, while no other disk is busy") {
    BackoffController c;
    for (int i = 0; i < 50; ++i)
        CHECK(c.update(one(50e-3, 3)) == 1.0); // 3 I/Os a second say nothing
}

TEST_CASE("adaptive: a busy disk first gets a quiet window, to learn its latency alone") {
    BackoffController c;
    CHECK(c.update(one(1.1e-3)) == 0.0); // busy, never seen alone: hold the jobs
    CHECK(c.update(one(1e-3)) == 1.0);   // the window: 1 ms alone; 1.1 ms before it is fine
    CHECK(c.update(one(1.2e-3)) == 1.0); // within 1.3x
    CHECK(c.update(one(2e-3)) == 0.5);   // harmed: halved at once
    CHECK(c.why() == "xvda at 2.00 ms, 1.00 ms alone");
    const auto windows = run(c, 40, [](int, double) { return 1e-3; });
    const auto held = std::count(windows.begin(), windows.end(), 0.0);
    CHECK(held >= 3); // one window after every 10 s of work while the disk is busy
    CHECK(held <= 4);
    CHECK(c.factor() == 1.0);
}

TEST_CASE("adaptive: a prefill that makes a disk 50x slower stops at once, even at its start") {
    BackoffController c;
    CHECK(c.update(one(50e-3)) == 0.0); // our first second: 50 ms, and no baseline yet
    CHECK(c.update(one(1e-3)) == 0.05); // alone 1 ms: the second before was harm, deep
    CHECK(c.why() == "xvda at 50.00 ms, 1.00 ms alone");
    c.update(one(1.1e-3));
    CHECK(c.update(one(30e-3)) == 0.05); // never below the floor: the prefill goes on
}

TEST_CASE("adaptive: a step not of our making backs off at once, then is learnt in the windows") {
    BackoffController c;
    // 1 ms alone; from t = 20 on, 4 ms whatever we do (the VM's own work changed).
    const auto step = [](int t, double) { return t < 20 ? 1e-3 : 4e-3; };
    const auto before = run(c, 20, step);
    CHECK(before.back() == 1.0);
    const auto after = run(c, 150, step, 20);
    CHECK(*std::min_element(after.begin() + 1, after.begin() + 3) <= 0.5); // backed off
    // Three windows show it is not ours, then a careful ramp: full speed again.
    CHECK(mean(after, 120) >= 0.8);
}

TEST_CASE("adaptive: a ramp not of our making is followed") {
    BackoffController c;
    const auto ramp = [](int t, double) { return 1e-3 + 3e-3 * std::min(t, 100) / 100.0; };
    const auto applied = run(c, 250, ramp);
    CHECK(mean(applied, 10) >= 0.4);
    CHECK(applied.back() == 1.0);
}

TEST_CASE("adaptive: noise within 1.3x of the latency alone is no harm") {
    BackoffController c;
    std::mt19937 random(7);
    std::uniform_real_distribution<double> noise(0.9, 1.15);
    const auto applied = run(c, 200, [&](int, double) { return 1e-3 * noise(random); });
    CHECK(mean(applied, 10) >= 0.8);
}

TEST_CASE(
    "adaptive: closed loop, our load slows the other disk: it is kept near its latency alone") {
    // The other disk: 1 ms alone, 4 ms beside a full-speed prefill.
    BackoffController c;
    std::mt19937 random(11);
    std::uniform_real_distribution<double> noise(0.95, 1.05);
    std::vector<double> latencies;
    const auto applied = run(c, 330, [&](int, double factor) {
        latencies.push_back(1e-3 * (1 + 3 * factor) * noise(random));
        return latencies.back();
    });
    std::vector<double> tail(latencies.begin() + 30, latencies.end());
    std::sort(tail.begin(), tail.end());
    const double p99 = tail[tail.size() * 99 / 100];
    MESSAGE("mean latency " << mean(tail) * 1e3 << " ms, p99 " << p99 * 1e3 << " ms, mean factor "
                            << mean(applied, 30));
    CHECK(p99 <= 1.5e-3);             // 4 ms at full speed
    CHECK(mean(applied, 30) >= 0.05); // and the prefill still moves
}

namespace {

// /proc/diskstats with xvda having done `ios` I/Os in `ms` ms so far, and our xvdb.
std::string diskstats(uint64_t ios, uint64_t ms) {
    return " 202 0 xvda " + std::to_string(ios) + " 0 0 " + std::to_string(ms) + " 0 0 0 0 0 " +
           std::to_string(ms) + " 0\n 202 16 xvdb 5 0 0 5 5 0 0 5 0 5 5\n";
}

} // namespace

TEST_CASE("adaptive mode from diskstats text: the first reading starts, harm backs off") {
    AdaptiveMode mode;
    const auto t0 = Clock::now();
    const auto at = [&](int s) { return t0 + std::chrono::seconds(s); };
    const std::set<std::string> ours{"xvdb"};
    auto text = diskstats(0, 0);
    CHECK_FALSE(mode.update({text, at(0), ours, 100e6, {}}).has_value());
    // xvda busy with no baseline yet: a quiet window (0) is asked for.
    text = diskstats(1000, 1000); // 1 ms each
    auto p = mode.update({text, at(1), ours, 100e6, {}});
    REQUIRE(p);
    CHECK(p->factor == 0);
    CHECK(mode.describe().find("quiet window") != std::string::npos);
    text = diskstats(2000, 2000); // alone: 1 ms
    p = mode.update({text, at(2), ours, 0, {}});
    REQUIRE(p);
    CHECK(p->factor == 1);
    text = diskstats(3000, 6000); // beside us: 4 ms
    p = mode.update({text, at(3), ours, 100e6, {}});
    REQUIRE(p);
    CHECK(p->factor < 0.5);
    CHECK(mode.take_news().find("backing off, xvda at 4.00 ms") != std::string::npos);
    CHECK(mode.describe().find("backed off to") != std::string::npos);
    // A gap of more than 3 s (no job ran) starts over.
    CHECK_FALSE(mode.update({text, at(10), ours, 0, {}}).has_value());
}

TEST_CASE("adaptive mode: the rate it scales is the highest seen at full speed, never a new job's "
          "first trickle") {
    // A job resumed after a detach ran at 1 byte/s while held; measured as "full
    // speed", it made the reference 1 MiB/s and the job crawled for minutes.
    AdaptiveMode mode;
    const auto t0 = Clock::now();
    const std::set<std::string> ours{"xvdb"};
    const auto idle = " 202 16 xvdb 5 0 0 5 5 0 0 5 0 5 5\n";
    CHECK_FALSE(mode.update({idle, t0, ours, 0, {}}).has_value());
    auto p = mode.update({idle, t0 + std::chrono::seconds(1), ours, 0, {}});
    REQUIRE(p);
    CHECK(p->reference_bytes_per_s == AdaptiveMode::unseen_full_rate);
    p = mode.update({idle, t0 + std::chrono::seconds(2), ours, 300e6, {}});
    REQUIRE(p);
    CHECK(p->reference_bytes_per_s == 300000000);
    p = mode.update({idle, t0 + std::chrono::seconds(3), ours, 12, {}});
    REQUIRE(p);
    CHECK(p->reference_bytes_per_s == 300000000);
}
