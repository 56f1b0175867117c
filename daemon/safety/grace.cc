#include "safety/grace.hh"

#include <sys/inotify.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/sysfs.hh"
#include "safety/system.hh"

namespace prewarmd {
namespace {

// nullopt: the count cannot be read now, which the decision takes as "not quiet".
std::optional<uint64_t> write_count(dev_t devnum) {
    auto sectors = sectors_written(devnum);
    return sectors ? std::optional<uint64_t>(*sectors) : std::nullopt;
}

} // namespace

Result<AttachGrace> AttachGrace::create() {
    AttachGrace g;
    g.m_inotify.reset(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    if (!g.m_inotify)
        return errno_error("inotify");
    return g;
}

Result<void> AttachGrace::watch(const std::string& key, const std::string& devnode, dev_t devnum,
                                Clock::time_point until) {
    forget(key);
    const int wd = ::inotify_add_watch(m_inotify.get(), devnode.c_str(), IN_OPEN | IN_CLOSE_WRITE);
    if (wd < 0)
        return errno_error("watch " + devnode);
    auto& w =
        m_watched[wd] = {key, devnode, devnum, wd, Clock::now(), until, write_count(devnum), {}};
    // Whoever opened it between its attach and now counts too.
    check_openers(w);
    return {};
}

Result<void> AttachGrace::watch_until_quiet(const std::string& key, const std::string& devnode,
                                            dev_t devnum, std::chrono::milliseconds quiet) {
    forget(key);
    const int wd = ::inotify_add_watch(m_inotify.get(), devnode.c_str(), IN_OPEN | IN_CLOSE_WRITE);
    if (wd < 0)
        return errno_error("watch " + devnode);
    const auto now = Clock::now();
    m_watched[wd] = {key, devnode, devnum, wd, now, now + quiet, write_count(devnum), {}, quiet};
    return {};
}

void AttachGrace::forget(const std::string& key) {
    for (auto it = m_watched.begin(); it != m_watched.end(); ++it)
        if (it->second.key == key) {
            ::inotify_rm_watch(m_inotify.get(), it->first);
            m_watched.erase(it);
            return;
        }
}

void AttachGrace::on_readable() {
    alignas(inotify_event) char buffer[4096];
    for (;;) {
        const ssize_t n = ::read(m_inotify.get(), buffer, sizeof buffer);
        if (n <= 0)
            return;
        for (ssize_t at = 0; at < n;) {
            const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
            at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
            const auto it = m_watched.find(event->wd);
            if (it == m_watched.end() || !it->second.in_use.empty())
                continue;
            auto& w = it->second;
            if (w.quiet) { // used again: the wait starts over
                w.until = Clock::now() + *w.quiet;
                continue;
            }
            if (event->mask & IN_CLOSE_WRITE) {
                // udev only reads: whoever opened it to write is someone else.
                w.in_use = "opened for writing by another process";
            } else if (event->mask & IN_OPEN) {
                check_openers(w);
            }
        }
    }
}

std::vector<AttachGrace::Outcome> AttachGrace::take_decided(Clock::time_point now) {
    std::vector<Outcome> decided;
    for (auto it = m_watched.begin(); it != m_watched.end();) {
        auto& w = it->second;
        if (w.in_use.empty() && now < w.until) {
            ++it;
            continue;
        }
        if (w.quiet) {
            // Still held, or written meanwhile: not quiet yet.
            // A count that cannot be read is not quiet either.
            const auto written = write_count(w.devnum);
            const auto openers = find_openers({w.devnum});
            const bool held = !std::all_of(openers.begin(), openers.end(), is_udev_worker);
            if (held || !written || !w.sectors_written || *written != *w.sectors_written) {
                w.sectors_written = written;
                w.until = now + *w.quiet;
                ++it;
                continue;
            }
        }
        if (w.in_use.empty()) {
            const auto after = sectors_written(w.devnum);
            if (!after)
                w.in_use = "its write count cannot be read (" + after.error().message + ")";
            else if (!w.sectors_written)
                w.in_use = "its write count could not be read when its grace began";
            else if (*after < *w.sectors_written)
                w.in_use = "its write count went back: not the disk its grace began on";
            else if (*after > *w.sectors_written)
                w.in_use = "written to by another process (" +
                           std::to_string((*after - *w.sectors_written) * 512) + " bytes)";
        }
        const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now - w.started);
        const auto quiet_for =
            w.quiet ? std::chrono::duration_cast<std::chrono::seconds>(*w.quiet) : seconds;
        decided.push_back({w.key, !w.in_use.empty(),
                           w.in_use.empty()
                               ? "quiet for " + std::to_string(quiet_for.count()) + " s"
                               : w.in_use});
        ::inotify_rm_watch(m_inotify.get(), it->first);
        it = m_watched.erase(it);
    }
    return decided;
}

void AttachGrace::check_openers(Watched& w) {
    for (const auto& opener : find_openers({w.devnum}))
        if (!is_udev_worker(opener)) {
            w.in_use = "opened by " + opener.text();
            return;
        }
}

std::optional<Clock::time_point> AttachGrace::next_deadline() const {
    std::optional<Clock::time_point> next;
    for (const auto& [wd, w] : m_watched) {
        const auto when = w.in_use.empty() ? w.until : w.started; // decided: at once
        if (!next || when < *next)
            next = when;
    }
    return next;
}

} // namespace prewarmd
