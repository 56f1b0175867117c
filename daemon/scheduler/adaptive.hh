// Adaptive background mode: prefills back off when the VM's other disks suffer.
//
// Every second the daemon reads /proc/diskstats and, for each disk other than
// those it is warming, the mean latency of the I/Os completed in that second.
// What a disk's latency is without us is measured, not guessed: in a quiet
// window, one second in which the jobs are held, taken whenever a busy disk has
// no such figure yet and every 10 s while any disk is busy (the mean of its last
// three windows is its baseline). The control law (AIMD), on the factor that
// scales the jobs' rate and queue depth:
//
//   harmed = some disk did at least 4 I/Os, at a latency above 1.3x its baseline
//   harmed:  factor = max(0.05, factor x min(0.5, 1.3 x baseline / latency))   at once
//   quiet:   factor = min(1, factor x 1.25)           after 3 quiet seconds in a row
//   idle:    factor = min(1, factor x 2)              each second no disk is busy
//
// With no other disk busy there are no windows, and the jobs run at full rate.
// AdaptiveMode (below) feeds the law from the text of /proc/diskstats.
// docs/adaptive.md has the reasoning and the figures.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.hh"

namespace prewarmd {

// The counters of one line of /proc/diskstats that the controller reads.
struct DiskCounters {
    uint64_t ios = 0;     // reads and writes completed
    uint64_t io_ms = 0;   // milliseconds spent on them
    uint64_t busy_ms = 0; // milliseconds with I/O in flight
};
std::map<std::string, DiskCounters> parse_diskstats(std::string_view text);

// One disk over one interval.
struct DiskLoad {
    uint64_t ios = 0;
    double latency_s = 0;   // mean per I/O
    double utilisation = 0; // 0..1
};

// The loads between two readings, over `seconds`, for the disks in both, but for
// `ignored` (our own jobs' disks) and their partitions (xvdb1, nvme0n1p1, loop0p1).
std::map<std::string, DiskLoad> loads_between(const std::map<std::string, DiskCounters>& before,
                                              const std::map<std::string, DiskCounters>& after,
                                              double seconds, const std::set<std::string>& ignored);

class BackoffController {
public:
    struct Law {
        double harm = 1.3;          // latency over baseline that counts as harm
        double decrease = 0.5;      // the factor, times this, when harmed
        double increase = 1.25;     // and times this when quiet long enough
        double idle_increase = 2;   // or this, each interval no disk is busy
        double floor = 0.05;        // never slower than this share: the prefill finishes
        unsigned quiet_needed = 3;  // quiet intervals in a row before a step up
        unsigned min_ios = 4;       // fewer I/Os in an interval say nothing
        unsigned window_every = 10; // intervals between quiet windows while disks are busy
        unsigned windows_kept = 3;  // a baseline is the mean of this many windows
    };
    BackoffController() : BackoffController(Law{}) {}
    explicit BackoffController(Law law) : m_law(law) {}

    // One interval's loads; returns the factor for the next: 0 holds the jobs for a
    // quiet window, else 0.05 .. 1.
    double update(const std::map<std::string, DiskLoad>& loads);
    double factor() const { return m_window ? 0 : m_factor; }
    // Why the last step down: "loop1 at 3.10 ms, 1.00 ms alone".
    const std::string& why() const { return m_why; }
    bool in_window() const { return m_window; }

private:
    double baseline(const std::string& name) const; // 0: never seen alone
    bool back_off(const std::map<std::string, DiskLoad>& loads);

    Law m_law;
    std::map<std::string, std::vector<double>> m_alone; // latencies in quiet windows
    std::map<std::string, DiskLoad> m_before_window;    // judged once the window is over
    double m_factor = 1;
    bool m_window = false;
    unsigned m_quiet = 0;
    unsigned m_since_window = 0;
    std::string m_why;
};

// Adaptive mode as the daemon runs it: a reading of /proc/diskstats once a second
// while a job runs, turned into the factor and the rate it scales.
class AdaptiveMode {
public:
    struct Reading {
        std::string_view diskstats; // the text of /proc/diskstats
        Clock::time_point at;
        std::set<std::string> warming;  // kernel names of the disks being warmed
        double warming_bytes_per_s = 0; // their jobs' rates together, over the last second
        std::optional<std::set<std::string>> watched; // adaptive_watch: only these count
    };
    struct Pressure {
        double factor = 1; // 0 holds the jobs for a quiet window
        // What the factor scales when total_rate is unlimited: the highest rate the
        // jobs were seen to reach at full speed (a guess until one was seen).
        uint64_t reference_bytes_per_s = 0;
    };
    static constexpr uint64_t unseen_full_rate = 32ULL << 20;

    // nullopt: the reading only starts an interval (the first, or after a gap of
    // more than 3 s in which no job ran: such a gap says nothing about now).
    std::optional<Pressure> update(const Reading& reading);
    // A line for the log when the jobs back off or are at full rate again; "" else.
    std::string take_news() { return std::exchange(m_news, {}); }
    // What the jobs' rate is to someone looking: held for a quiet window, backed off
    // (and why), or "" at full rate.
    std::string describe() const;

private:
    BackoffController m_controller;
    std::map<std::string, DiskCounters> m_last;
    Clock::time_point m_last_at{};
    uint64_t m_full_rate = 0;
    bool m_backed_off = false;
    std::string m_news;
};

} // namespace prewarmd
