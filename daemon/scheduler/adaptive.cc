#include "scheduler/adaptive.hh"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>

#include "base/units.hh"

namespace prewarmd {
namespace {

// xvdb1 of xvdb, nvme0n1p1 of nvme0n1, loop0p1 of loop0.
bool partition_of(const std::string& name, const std::string& disk) {
    if (name.size() <= disk.size() || name.compare(0, disk.size(), disk) != 0)
        return false;
    size_t at = disk.size();
    if (std::isdigit(static_cast<unsigned char>(disk.back()))) {
        if (name[at] != 'p')
            return false;
        ++at;
    }
    return at < name.size() &&
           std::all_of(name.begin() + static_cast<long>(at), name.end(),
                       [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

} // namespace

std::map<std::string, DiskCounters> parse_diskstats(std::string_view text) {
    std::map<std::string, DiskCounters> out;
    std::istringstream in{std::string(text)};
    for (std::string line; std::getline(in, line);) {
        std::istringstream fields(line);
        unsigned major = 0, minor = 0;
        std::string name;
        uint64_t f[11] = {};
        if (!(fields >> major >> minor >> name))
            continue;
        unsigned n = 0;
        while (n < 11 && fields >> f[n])
            ++n;
        if (n < 11)
            continue;
        // reads, merged, sectors, ms reading; writes, merged, sectors, ms writing;
        // in flight, ms doing I/O, weighted ms.
        out[name] = {f[0] + f[4], f[3] + f[7], f[9]};
    }
    return out;
}

std::map<std::string, DiskLoad> loads_between(const std::map<std::string, DiskCounters>& before,
                                              const std::map<std::string, DiskCounters>& after,
                                              double seconds,
                                              const std::set<std::string>& ignored) {
    std::map<std::string, DiskLoad> out;
    if (seconds <= 0)
        return out;
    for (const auto& [name, now] : after) {
        const auto was = before.find(name);
        if (was == before.end() || now.ios < was->second.ios)
            continue;                   // new, or counters reset (a disk attached again)
        const std::string& seen = name; // clang 14 lambdas cannot capture a binding
        if (std::any_of(ignored.begin(), ignored.end(), [&](const std::string& disk) {
                return seen == disk || partition_of(seen, disk);
            }))
            continue;
        DiskLoad load;
        load.ios = now.ios - was->second.ios;
        if (load.ios)
            load.latency_s = static_cast<double>(now.io_ms - was->second.io_ms) / 1000.0 /
                             static_cast<double>(load.ios);
        load.utilisation = std::min(1.0, static_cast<double>(now.busy_ms - was->second.busy_ms) /
                                             1000.0 / seconds);
        out[name] = load;
    }
    return out;
}

double BackoffController::baseline(const std::string& name) const {
    const auto alone = m_alone.find(name);
    if (alone == m_alone.end() || alone->second.empty())
        return 0;
    double sum = 0;
    for (const double l : alone->second)
        sum += l;
    return sum / static_cast<double>(alone->second.size());
}

// The worst disk over 1.3x its latency alone: a step down as deep as the excess
// (at least halving), so a prefill that made a disk 100x slower stops at once.
bool BackoffController::back_off(const std::map<std::string, DiskLoad>& loads) {
    double scale = 1;
    for (const auto& [name, load] : loads) {
        const double alone = baseline(name);
        if (load.ios < m_law.min_ios || alone <= 0 || load.latency_s <= m_law.harm * alone)
            continue;
        const double step = std::min(m_law.decrease, m_law.harm * alone / load.latency_s);
        if (step < scale) {
            scale = step;
            m_why = name + " at " + format_ms(load.latency_s) + ", " + format_ms(alone) + " alone";
        }
    }
    if (scale == 1)
        return false;
    m_factor = std::max(m_law.floor, m_factor * scale);
    m_quiet = 0;
    return true;
}

double BackoffController::update(const std::map<std::string, DiskLoad>& loads) {
    if (m_window) {
        // The jobs were held: what each busy disk does alone.
        for (const auto& [name, load] : loads) {
            if (load.ios < m_law.min_ios)
                continue;
            auto& alone = m_alone[name];
            alone.push_back(load.latency_s);
            if (alone.size() > m_law.windows_kept)
                alone.erase(alone.begin());
        }
        m_window = false;
        m_since_window = 0;
        // The second before the window, judged now that it has a baseline.
        back_off(m_before_window);
        m_before_window.clear();
        return m_factor;
    }
    bool busy = false, unknown = false;
    for (const auto& [name, load] : loads)
        if (load.ios >= m_law.min_ios) {
            busy = true;
            unknown |= baseline(name) <= 0;
        }
    const bool harmed = back_off(loads);
    if (!harmed && !busy) {
        // Nobody to disturb: back to full speed quickly.
        m_factor = std::min(1.0, m_factor * m_law.idle_increase);
        m_quiet = 0;
    } else if (!harmed && ++m_quiet >= m_law.quiet_needed) {
        m_factor = std::min(1.0, m_factor * m_law.increase);
        m_quiet = 0;
    }
    if (busy && (unknown || ++m_since_window >= m_law.window_every)) {
        m_window = true;
        if (unknown)
            m_before_window = loads;
    }
    return factor();
}

std::optional<AdaptiveMode::Pressure> AdaptiveMode::update(const Reading& r) {
    auto counters = parse_diskstats(r.diskstats);
    if (m_controller.factor() == 1 && r.warming_bytes_per_s > 0)
        m_full_rate = std::max(m_full_rate, static_cast<uint64_t>(r.warming_bytes_per_s));
    const double seconds = std::chrono::duration<double>(r.at - m_last_at).count();
    std::optional<Pressure> out;
    if (!m_last.empty() && seconds < 3) {
        auto loads = loads_between(m_last, counters, seconds, r.warming);
        if (r.watched)
            std::erase_if(loads, [&](const auto& load) { return !r.watched->count(load.first); });
        const double factor = m_controller.update(loads);
        if (factor > 0 && factor < 1 && !m_backed_off)
            m_news = "adaptive: backing off, " + m_controller.why();
        else if (factor == 1 && m_backed_off)
            m_news = "adaptive: the other disks are as fast as alone: full rate again";
        if (factor > 0)
            m_backed_off = factor < 1;
        out = Pressure{factor, m_full_rate ? m_full_rate : unseen_full_rate};
    }
    m_last = std::move(counters);
    m_last_at = r.at;
    return out;
}

std::string AdaptiveMode::describe() const {
    if (m_controller.in_window())
        return "held for a quiet window: one second in which the other disks are timed alone";
    const double factor = m_controller.factor();
    if (factor >= 1)
        return {};
    char pct[16];
    std::snprintf(pct, sizeof pct, "%.0f%%", factor * 100);
    return std::string("backed off to ") + pct + " of its rate: " + m_controller.why();
}

} // namespace prewarmd
