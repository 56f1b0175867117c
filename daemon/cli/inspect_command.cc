#include "cli/inspect_command.hh"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <pthread.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include <nlohmann/json.hpp>

#include "base/args.hh"
#include "base/json_text.hh"
#include "base/unique_fd.hh"
#include "base/units.hh"
#include "cli/command.hh"
#include "discovery/identity.hh"
#include "discovery/match.hh"
#include "discovery/tracker.hh"
#include "discovery/udev.hh"
#include "safety/classify.hh"
#include "safety/filesystem.hh"
#include "safety/grace.hh"

namespace prewarmd {
namespace {

constexpr OptionSpec inspect_options[] = {
    {"match", 0, "RULE",
     "a match rule, repeatable (default: xen): xen, name:GLOB,\n"
     "id:GLOB, id_path:GLOB, serial:GLOB, wwn:GLOB, size:MIN-MAX"},
    {"exclude", 0, "RULE", "an exclude rule, repeatable"},
    {"json", 0, "", "JSON: an array of disks; with --watch, one event per line"},
    {"watch", 0, "",
     "then report disks attached, changed and detached, until interrupted;\n"
     "disks the rules leave out are listed but not opened"},
    {"grace", 0, "DURATION",
     "with --watch: watch each attached disk this long for other\n"
     "users, as the daemon does before warming it (default 30s; 0s: no)"},
    {"help", 'h', "", "this text"},
};

std::string usage() {
    return "Usage: prewarmd inspect [OPTIONS] [DEVICE...]\n\n"
           "For each disk (every attached block disk when none is named): whether the daemon\n"
           "would consider it, its identity, what it holds, and whether it may be touched,\n"
           "with the reasons. Reads only; writes nothing.\n\n" +
           options_help(inspect_options) +
           "\nVerdicts: eligible (blank and unused: warmed by itself when matched),\n"
           "needs-request (holds data: warmed only when asked, unmounted), refused (in use\n"
           "or read-only).\n";
}

struct Report {
    DiskInfo disk;
    MatchDecision match;
    std::string identity;
    Classification classification;
    // Mounted from the disk: whether each is warmed online (a filesystem job), or
    // why not; and whether systemd's weekly fstrim would discard their free space.
    std::vector<Result<FilesystemTarget>> filesystems;
    bool fstrim_timer_active = false;
};

// With only_considered (--watch, which follows what the daemon would do), a disk
// the rules leave out is not opened.
Report examine(const DiskInfo& disk, const std::vector<MatchRule>& match,
               const std::vector<MatchRule>& exclude, const SystemView& system,
               const ProtectedDisks& protected_disks, bool only_considered) {
    Report r{disk, decide_match(disk, match, exclude, protected_disks), disk_identity(disk), {}, {},
             false};
    if (disk.is_partition()) {
        r.classification.reasons.push_back("a partition: only whole disks are warmed");
        return r;
    }
    if (only_considered && !r.match.matched) {
        r.classification.reasons.push_back("not examined: not considered");
        return r;
    }
    r.filesystems = filesystems_on_disk(disk.name, system.mounts, system.sys);
    r.fstrim_timer_active = !r.filesystems.empty() && fstrim_timer_enabled();
    // Read-only and shared: a look must not make someone's mkfs fail.
    UniqueFd fd(::open(disk.devnode.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (!fd) {
        r.classification.reasons.push_back(std::string("cannot open ") + disk.devnode + ": " +
                                           std::strerror(errno));
        return r;
    }
    r.classification = classify(disk, fd.get(), system);
    return r;
}

nlohmann::json to_json(const Report& r) {
    const auto& f = r.classification.facts;
    auto signatures = nlohmann::json::array();
    for (const auto& s : f.signatures)
        signatures.push_back({{"type", s.type},
                              {"usage", s.usage},
                              {"uuid", s.uuid},
                              {"label", s.label},
                              {"where", s.where}});
    auto filesystems = nlohmann::json::array();
    for (const auto& fs : r.filesystems)
        filesystems.push_back(
            fs ? nlohmann::json{{"mount_point", fs->mount_point},
                                {"fstype", fs->fstype},
                                {"device", fs->device},
                                {"warmed_online", true},
                                {"reason", ""}}
               : nlohmann::json{{"warmed_online", false}, {"reason", fs.error().message}});
    const auto vdev = xen_vdev(r.disk);
    return {
        {"name", r.disk.name},
        {"devnode", r.disk.devnode},
        {"devpath", r.disk.devpath},
        {"identity", r.identity},
        {"size_bytes", r.disk.size_bytes},
        {"diskseq", r.disk.diskseq},
        {"xen_vdev", vdev ? nlohmann::json(*vdev) : nlohmann::json(nullptr)},
        {"matched", r.match.matched},
        {"match_reason", r.match.reason},
        {"verdict", to_string(r.classification.verdict)},
        {"reasons", r.classification.reasons},
        {"logical_block_bytes", f.logical_block_bytes},
        {"physical_block_bytes", f.physical_block_bytes},
        {"optimal_io_bytes", f.optimal_io_bytes},
        {"rotational", f.rotational},
        {"read_only", f.read_only},
        {"removable", f.removable},
        {"partitions", f.partitions},
        {"signatures", signatures},
        {"filesystems", filesystems},
        {"fstrim_timer_active", r.fstrim_timer_active},
    };
}

std::string to_text(const Report& r) {
    const auto& f = r.classification.facts;
    std::string out = r.disk.name + "  " + r.disk.devnode + "  " + format_size(r.disk.size_bytes) +
                      "  " + r.identity + "\n";
    out +=
        "  considered: " + std::string(r.match.matched ? "yes, " : "no, ") + r.match.reason + "\n";
    out += "  verdict:    " + std::string(to_string(r.classification.verdict)) + "\n";
    for (const auto& reason : r.classification.reasons)
        out += "    - " + reason + "\n";
    if (f.logical_block_bytes)
        out += "  blocks:     logical " + std::to_string(f.logical_block_bytes) + ", physical " +
               std::to_string(f.physical_block_bytes) + ", optimal I/O " +
               (f.optimal_io_bytes ? format_size(f.optimal_io_bytes) : std::string("none")) +
               (f.rotational ? ", rotational" : "") + (f.removable ? ", removable" : "") + "\n";
    for (const auto& fs : r.filesystems)
        out += fs ? "  filesystem: " + fs->fstype + " on " + fs->device + " at " + fs->mount_point +
                        ": its free space is warmed online\n"
                  : "  filesystem: not warmed: " + fs.error().message + "\n";
    if (r.fstrim_timer_active)
        out += "  note:       fstrim.timer is enabled: each week it discards the free space, which "
               "a thin backend may make cold again\n";
    return out;
}

// Reports disks as they come and go, until SIGINT or SIGTERM.
int watch(const Udev& udev, UdevMonitor& monitor, const std::vector<MatchRule>& match,
          const std::vector<MatchRule>& exclude, bool json, std::chrono::nanoseconds grace_time) {
    auto grace = AttachGrace::create();
    if (!grace) {
        std::fprintf(stderr, "prewarmd inspect: %s\n", grace.error().message.c_str());
        return exit_failed;
    }
    std::map<std::string, DiskInfo> watched; // by devpath
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    UniqueFd signal_fd(::signalfd(-1, &signals, SFD_CLOEXEC));

    DiskTracker tracker;
    const auto report = [&](const DiskTracker::Update& update) {
        const auto system = SystemView::read();
        const auto protected_disks = find_protected_disks(system.mounts, system.swaps, system.sys);
        if (update.event == DiskTracker::Event::detached) {
            if (json)
                std::printf("%s\n", json_text({{"event", "detached"},
                                               {"why", update.why},
                                               {"name", update.disk.name},
                                               {"identity", disk_identity(update.disk)}})
                                        .c_str());
            else
                std::printf("detached %s (%s): %s\n", update.disk.name.c_str(),
                            disk_identity(update.disk).c_str(), update.why.c_str());
        } else {
            const auto r = examine(update.disk, match, exclude, system, protected_disks, true);
            if (json) {
                auto out = to_json(r);
                out["event"] = to_string(update.event);
                out["why"] = update.why;
                std::printf("%s\n", json_text(out).c_str());
            } else {
                std::printf("%s %s: %s\n%s", std::string(to_string(update.event)).c_str(),
                            update.disk.name.c_str(), update.why.c_str(), to_text(r).c_str());
            }
        }
        std::fflush(stdout);
    };
    const auto start_grace = [&](const DiskTracker::Update& update) {
        if (update.event == DiskTracker::Event::detached) {
            grace->forget(update.disk.devpath);
            watched.erase(update.disk.devpath);
            return;
        }
        if (update.event != DiskTracker::Event::attached || grace_time.count() == 0)
            return;
        const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(grace_time);
        if (grace->watch(update.disk.devpath, update.disk.devnode,
                         makedev(update.disk.major, update.disk.minor), until))
            watched[update.disk.devpath] = update.disk;
    };
    const auto report_grace = [&](const AttachGrace::Outcome& outcome) {
        const auto it = watched.find(outcome.key);
        if (it == watched.end())
            return;
        const auto& name = it->second.name;
        if (json)
            std::printf("%s\n", json_text({{"event", "grace"},
                                           {"name", name},
                                           {"identity", disk_identity(it->second)},
                                           {"in_use", outcome.in_use},
                                           {"why", outcome.why}})
                                    .c_str());
        else
            std::printf("grace %s: %s%s\n", name.c_str(), outcome.in_use ? "in use, " : "",
                        outcome.why.c_str());
        std::fflush(stdout);
        watched.erase(it);
    };
    for (const auto& disk : udev.disks())
        for (const auto& update : tracker.on_uevent("present", disk))
            report(update);
    // On standard error, so that --json's lines stay events; a script may wait for it.
    std::fprintf(stderr, "prewarmd inspect: watching for disks (Ctrl-C stops)\n");

    pollfd fds[3] = {
        {monitor.fd(), POLLIN, 0}, {signal_fd.get(), POLLIN, 0}, {grace->fd(), POLLIN, 0}};
    for (;;) {
        int timeout = -1;
        if (const auto next = grace->next_deadline())
            timeout = static_cast<int>(std::max<int64_t>(
                0, std::chrono::ceil<std::chrono::milliseconds>(*next - Clock::now()).count()));
        if (::poll(fds, 3, timeout) < 0) {
            if (errno == EINTR)
                continue;
            std::fprintf(stderr, "prewarmd inspect: poll: %s\n", std::strerror(errno));
            return exit_failed;
        }
        if (fds[1].revents)
            return exit_ok;
        while (auto event = monitor.receive())
            for (const auto& update : tracker.on_uevent(event->action, event->disk)) {
                start_grace(update);
                report(update);
            }
        grace->on_readable();
        for (const auto& outcome : grace->take_decided(Clock::now()))
            report_grace(outcome);
    }
}

} // namespace

int inspect_command(const std::vector<std::string>& args) {
    const auto fail = [](int code, const std::string& message) {
        return command_error("inspect", code, message);
    };
    ParsedArgs parsed;
    if (const auto done = start_command("inspect", args, inspect_options, usage, parsed))
        return *done;
    auto match_texts = parsed.values("match");
    if (match_texts.empty())
        match_texts.push_back("xen");
    auto match = parse_match_rules(match_texts);
    if (!match)
        return fail(exit_usage, match.error().message);
    auto exclude = parse_match_rules(parsed.values("exclude"));
    if (!exclude)
        return fail(exit_usage, exclude.error().message);
    const bool json = parsed.has("json");

    auto udev = Udev::open();
    if (!udev)
        return fail(exit_failed, udev.error().message);
    if (parsed.has("watch")) {
        if (!parsed.positional.empty())
            return fail(exit_usage, "--watch reports every disk: name none");
        // Listening starts before the enumeration, so no disk slips in between.
        auto monitor = UdevMonitor::open(*udev);
        if (!monitor)
            return fail(exit_failed, monitor.error().message);
        std::chrono::nanoseconds grace_time = std::chrono::seconds(30);
        if (const auto text = parsed.value("grace")) {
            auto parsed_grace = parse_duration(*text);
            if (!parsed_grace)
                return fail(exit_usage, "--grace: " + parsed_grace.error().message);
            grace_time = *parsed_grace;
        }
        return watch(*udev, *monitor, *match, *exclude, json, grace_time);
    }

    std::vector<DiskInfo> disks;
    if (parsed.positional.empty()) {
        for (auto& disk : udev->disks())
            if (disk.size_bytes > 0) // an idle loop device, a drive without medium
                disks.push_back(std::move(disk));
    } else {
        for (const auto& path : parsed.positional) {
            auto disk = udev->device(path);
            if (!disk)
                return fail(exit_usage, disk.error().message);
            disks.push_back(std::move(*disk));
        }
    }
    const auto system = SystemView::read();
    const auto protected_disks = find_protected_disks(system.mounts, system.swaps, system.sys);
    auto out = nlohmann::json::array();
    for (const auto& disk : disks) {
        const auto r = examine(disk, *match, *exclude, system, protected_disks, false);
        if (json)
            out.push_back(to_json(r));
        else
            std::fputs((to_text(r) + "\n").c_str(), stdout);
    }
    if (json)
        std::printf("%s\n", json_text(out, 2).c_str());
    return exit_ok;
}

} // namespace prewarmd
