#include "cli/prefill_command.hh"

#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/args.hh"
#include "base/json_text.hh"
#include "base/sysfs.hh"
#include "base/units.hh"
#include "cli/command.hh"
#include "cli/progress_view.hh"
#include "control/refusal.hh"
#include "control/schema.hh"
#include "discovery/identity.hh"
#include "discovery/udev.hh"
#include "engine/checkpoint.hh"
#include "engine/deadline.hh"
#include "job/runner.hh"
#include "safety/filesystem.hh"

namespace prewarmd {
namespace {

constexpr OptionSpec prefill_options[] = {
    {"mode", 0, "MODE",
     "zero (default): write zeros over blocks that read all-zero;\n"
     "rewrite: write back what was read (clones); read: only read"},
    {"rate", 0, "RATE", "at most this fast, e.g. 50MiB/s; unlimited (default) or 0B/s: no limit"},
    {"burst", 0, "SIZE", "what the throttle lets through at once (default one chunk)"},
    {"queue-depth", 0, "N", "chunks in flight, 1 to 64 (default 8)"},
    {"by", 0, "DURATION",
     "warm within this long, e.g. 30min (at most a week), paced to\n"
     "end then, not flat out; refused where --rate cannot make it"},
    {"chunk", 0, "SIZE", "chunk size (default 4MiB, grown to suit the device)"},
    {"backend-block", 0, "SIZE", "the backend's allocation block (default 2MiB)"},
    {"strategy", 0, "STRATEGY",
     "full: every byte; sparse: 4 KiB per backend block;\n"
     "auto (default): sparse where the probe proves it enough"},
    {"checkpoint", 0, "FILE", "record progress in FILE, and resume from it"},
    {"checkpoint-interval", 0, "DURATION", "how often to flush and record (default 5s)"},
    {"io-engine", 0, "ENGINE", "auto (default), uring or sync (pread/pwrite)"},
    {"reserve", 0, "SIZE|N%",
     "a mounted filesystem: available space it never takes\n(default 5% of its size)"},
    {"normal-priority", 0, "", "I/O priority class best-effort, not idle"},
    {"json", 0, "", "print the summary as JSON on standard output, no progress"},
    {"help", 'h', "", "this text"},
};

std::string usage() {
    return "Usage: prewarmd prefill [OPTIONS] PATH\n\n"
           "Warms one disk, a sparse file, or the free space of the ext4 or xfs mounted at\n"
           "PATH (a directory), in the foreground: every chunk is read, and\n"
           "written back as it was. What PATH reads back never changes. A block device is\n"
           "opened exclusively (not while it is mounted or otherwise in use), and the job\n"
           "steps aside the moment another process opens it or writes to it.\n\n" +
           options_help(prefill_options) +
           "\nProgress goes to standard error (a bar on a terminal), the summary to standard\n"
           "output. Ctrl-C stops after the chunks in flight and saves the checkpoint.\n\n"
           "The last line says how it ended: warm (the probe proved the backend allocated\n"
           "what was written), unproven (written, not proven warm) or not_warmable (the\n"
           "backend discards zero writes: warm the mounted filesystem instead), with the\n"
           "proof or why there is none.\n\n"
           "Exit status:\n"
           "  0    warm                      5    paused: the backend is full (ENOSPC)\n"
           "  1    failed: an I/O error      6    refused: in use, or read-only\n"
           "  2    bad usage or input        8    unproven: written, not proven warm\n"
           "  3    stepped aside: another    9    not_warmable: the backend discards\n"
           "       process opened or wrote        zero writes\n"
           "       to the disk               130  stopped by SIGINT (143: SIGTERM)\n"
           "  4    detached: the device\n"
           "       went away\n";
}

struct Settings {
    std::string path;
    std::string reserve = "5%";
    Strategy strategy = Strategy::automatic;
    bool backend_block_explicit = false;
    JobOptions job;
    bool chunk_explicit = false;
    uint64_t backend_block_bytes = 2 * 1024 * 1024;
    IoEngineKind io = IoEngineKind::automatic;
    bool json = false;
    std::optional<uint64_t> within_s; // --by: a deadline, this long from the start
};

Result<Settings> parse_settings(const ParsedArgs& args) {
    Settings s;
    uint64_t queue_depth = s.job.queue_depth;
    const auto bad = [](const std::string& message) { return Error{-EINVAL, message}; };
    if (args.positional.size() != 1)
        return bad(args.positional.empty() ? "no PATH given (see --help)"
                                           : "one PATH only, not '" + args.positional[1] + "'");
    s.path = args.positional[0];
    if (const auto mode = args.value("mode")) {
        const auto parsed = parse_name<Mode>(*mode);
        if (!parsed)
            return bad("--mode: '" + *mode + "' is not " + names_text<Mode>());
        s.job.mode = *parsed;
    }
    const auto size = [&](const char* name, uint64_t& out) -> Result<void> {
        if (const auto text = args.value(name)) {
            auto bytes = parse_size(*text);
            if (!bytes)
                return bad(std::string("--") + name + ": " + bytes.error().message);
            out = *bytes;
        }
        return {};
    };
    for (const auto& [name, out] :
         {std::pair{"burst", &s.job.burst_bytes}, std::pair{"chunk", &s.job.chunk_bytes},
          std::pair{"backend-block", &s.backend_block_bytes}})
        if (auto ok = size(name, *out); !ok)
            return ok.error();
    s.chunk_explicit = args.has("chunk");
    s.backend_block_explicit = args.has("backend-block");
    if (const auto text = args.value("strategy")) {
        const auto strategy = parse_name<Strategy>(*text);
        if (!strategy)
            return bad("--strategy: '" + *text + "' is not " + names_text<Strategy>());
        s.strategy = *strategy;
    }
    // As a start's options are taken (control/schema.hh): the same words and range.
    for (const auto& [name, out] :
         {std::pair{"rate", &s.job.rate_bytes_per_s}, std::pair{"queue-depth", &queue_depth}})
        if (const auto text = args.value(name)) {
            auto value = parse_field_text(*field_by_cli(start_fields(), name), *text);
            if (!value)
                return bad(std::string("--") + name + ": " + value.error().message);
            *out = std::get<uint64_t>(*value);
        }
    s.job.queue_depth = static_cast<unsigned>(queue_depth);
    if (const auto text = args.value("by")) {
        auto value = parse_field_text(*field_by_cli(start_fields(), "by"), *text);
        if (!value)
            return bad("--by: " + value.error().message);
        s.within_s = std::get<uint64_t>(*value);
    }
    if (const auto text = args.value("io-engine")) {
        const auto io = parse_name<IoEngineKind>(*text);
        if (!io)
            return bad("--io-engine: '" + *text + "' is not " + names_text<IoEngineKind>());
        s.io = *io;
    }
    s.reserve = args.value("reserve").value_or(s.reserve);
    s.job.checkpoint_path = args.value("checkpoint").value_or("");
    if (const auto text = args.value("checkpoint-interval")) {
        auto interval = parse_duration(*text);
        if (!interval)
            return bad("--checkpoint-interval: " + interval.error().message);
        if (*interval < std::chrono::milliseconds(100))
            return bad("--checkpoint-interval: at least 100ms");
        s.job.checkpoint_interval =
            std::chrono::duration_cast<std::chrono::milliseconds>(*interval);
    }
    s.job.idle_priority = !args.has("normal-priority");
    s.json = args.has("json");
    return s;
}

// Standard error, shared by the progress line and the job's messages.
class Console {
public:
    explicit Console(bool quiet) : m_tty(::isatty(STDERR_FILENO) == 1), m_quiet(quiet) {}
    bool tty() const { return m_tty; }

    void message(const std::string& text) {
        std::lock_guard lock(m_mutex);
        clear();
        std::fprintf(stderr, "prewarmd: %s\n", text.c_str());
    }
    void progress(const std::string& name, const ProgressSnapshot& s) {
        if (m_quiet)
            return;
        std::lock_guard lock(m_mutex);
        if (m_tty) {
            std::fprintf(stderr, "\r\033[K%s %s", progress_bar(s.ratio(), 30).c_str(),
                         progress_line(s).c_str());
            m_line_shown = true;
        } else {
            std::fprintf(stderr, "prewarmd: %s: %s\n", name.c_str(), progress_line(s).c_str());
        }
        std::fflush(stderr);
    }
    void done() {
        std::lock_guard lock(m_mutex);
        clear();
    }

private:
    void clear() {
        if (m_line_shown) {
            std::fputs("\r\033[K", stderr);
            m_line_shown = false;
        }
    }

    std::mutex m_mutex;
    const bool m_tty;
    const bool m_quiet;
    bool m_line_shown = false;
};

// --by: every second, the rate the bytes left need in the time left, within
// --rate, as the daemon paces a start's deadline (engine/deadline.hh).
class DeadlinePacer {
public:
    DeadlinePacer(const Settings& settings, Console& console)
        : m_cap(settings.job.rate_bytes_per_s), m_console(console) {
        if (settings.within_s)
            m_deadline = deadline_within(*settings.within_s, 0);
    }

    bool active() const { return m_deadline.has_value(); }

    void pace(JobRunner& job, const ProgressSnapshot& s) {
        if (!m_deadline || s.status != JobStatus::running || !s.total_bytes)
            return;
        m_deadline->total_bytes = s.total_bytes;
        const auto pace = pace_deadline(*m_deadline, s.done_bytes, wall_seconds(), m_cap);
        if (pace.rate_bytes_per_s != s.rate_limit_bytes_per_s)
            job.command(RateCommand{pace.rate_bytes_per_s, 0});
        if (!pace.on_track && m_on_track)
            m_console.message(
                "warning: will miss the deadline of " + rfc3339(m_deadline->at_unix) + ": " +
                (pace.needed_bytes_per_s
                     ? "needs " + format_rate(static_cast<double>(pace.needed_bytes_per_s))
                     : std::string("the deadline has passed")));
        m_on_track = pace.on_track;
    }

    // The summary's "deadline": when, and met or missed by how much, as it ended.
    std::optional<nlohmann::json> summary() const {
        if (!m_deadline)
            return std::nullopt;
        const auto early = static_cast<int64_t>(
            std::floor(static_cast<double>(m_deadline->at_unix) - wall_seconds()));
        return nlohmann::json{
            {"at", rfc3339(m_deadline->at_unix)}, {"met", early >= 0}, {"seconds_early", early}};
    }

private:
    std::optional<Deadline> m_deadline;
    uint64_t m_cap;
    Console& m_console;
    bool m_on_track = true;
};

// Runs the job on its own thread; this one takes signals and draws progress.
int run_job(JobRunner& job, const Settings& settings, Console& console) {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGUSR1); // the job thread's "finished"
    sigset_t previous;
    pthread_sigmask(SIG_BLOCK, &signals, &previous);

    std::atomic<bool> finished{false};
    const pthread_t main_thread = pthread_self();
    ProgressSnapshot result;
    std::thread worker([&] {
        result = job.run();
        finished = true;
        pthread_kill(main_thread, SIGUSR1);
    });

    int stopped_by = 0;
    bool backend_full = false;
    DeadlinePacer pacer(settings, console);
    const auto refresh =
        console.tty() || pacer.active() ? std::chrono::milliseconds(200) : std::chrono::seconds(5);
    auto shown = std::chrono::steady_clock::now() - std::chrono::hours(1);
    while (!finished) {
        timespec timeout{refresh.count() / 1000, (refresh.count() % 1000) * 1'000'000};
        const int sig = sigtimedwait(&signals, nullptr, &timeout);
        if ((sig == SIGINT || sig == SIGTERM) && !stopped_by) {
            stopped_by = sig;
            job.command(StopCommand{JobStatus::cancelled,
                                    sig == SIGINT ? "stopped by SIGINT" : "stopped by SIGTERM"});
        }
        if (finished)
            break;
        const auto s = job.snapshot();
        // Nobody is there to resume a job the backend paused: end it, keeping its checkpoint.
        if (s.status == JobStatus::paused && !stopped_by && !backend_full) {
            backend_full = true;
            job.command(StopCommand{JobStatus::cancelled, s.reason});
        }
        pacer.pace(job, s);
        // Not more often than the console wants it, where the deadline wakes this sooner.
        const auto now = std::chrono::steady_clock::now();
        if (sig != SIGUSR1 && (console.tty() || now - shown >= std::chrono::seconds(5))) {
            console.progress(settings.path, s);
            shown = now;
        }
    }
    worker.join();
    // The worker's SIGUSR1 may still be pending (it is sent after `finished`): taken
    // here, or it would end the process once unblocked.
    sigset_t finished_signal;
    sigemptyset(&finished_signal);
    sigaddset(&finished_signal, SIGUSR1);
    const timespec now{0, 0};
    while (sigtimedwait(&finished_signal, nullptr, &now) == SIGUSR1) {
    }
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    console.done();

    if (settings.json) {
        nlohmann::json out = result;
        out["path"] = settings.path;
        if (const auto deadline = pacer.summary())
            out["deadline"] = *deadline;
        std::printf("%s\n", json_text(out, 2).c_str());
    } else {
        std::fputs(summary_text(settings.path, result).c_str(), stdout);
        if (const auto deadline = pacer.summary()) {
            const int64_t early = (*deadline)["seconds_early"];
            const std::string how =
                early >= 0 ? "met, " + format_duration(std::chrono::seconds(early)) + " early"
                           : "missed by " + format_duration(std::chrono::seconds(-early));
            std::printf("deadline: %s, %s\n", (*deadline)["at"].get<std::string>().c_str(),
                        how.c_str());
        }
    }
    switch (result.status) {
    case JobStatus::warm:
    case JobStatus::unproven:
    case JobStatus::not_warmable:
        return *outcome_exit(to_string(result.status));
    case JobStatus::stepped_aside:
        return exit_stepped_aside;
    case JobStatus::detached:
        return exit_detached;
    case JobStatus::cancelled:
        if (stopped_by)
            return stopped_by == SIGINT ? exit_sigint : exit_sigterm;
        return backend_full ? exit_backend_full : exit_failed;
    default:
        return exit_failed;
    }
}

// The disk's identity as the daemon knows it, so their checkpoints agree.
Result<std::string> identify(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) < 0)
        return errno_error(path);
    if (!S_ISBLK(st.st_mode)) {
        std::error_code ec;
        const auto real = std::filesystem::canonical(path, ec);
        return file_identity(ec ? path : real.string(), static_cast<uint64_t>(st.st_size));
    }
    auto udev = Udev::open();
    if (!udev)
        return udev.error();
    auto disk = udev->device(st.st_rdev);
    if (!disk)
        return disk.error();
    return disk_identity(*disk);
}

// How an error of opening the job ends the command.
int open_failure(int err) {
    switch (-err) {
    case EBUSY:
    case EROFS:
    case EACCES:
    case EPERM:
        return exit_refused;
    case ENOENT:
    case ENOTBLK:
    case ENXIO:
    case ENODEV:
    case EISDIR:
    case EINVAL:
        return exit_usage;
    default:
        return exit_failed;
    }
}

// "5%" of the filesystem's size, or a size.
Result<uint64_t> parse_reserve(const std::string& text, uint64_t fs_size) {
    if (!text.empty() && text.back() == '%') {
        auto percent = parse_count(text.substr(0, text.size() - 1), 0, 90);
        if (!percent)
            return percent.error();
        return fs_size / 100 * static_cast<uint64_t>(*percent);
    }
    return parse_size(text);
}

} // namespace

int prefill_command(const std::vector<std::string>& args) {
    const auto fail = [](int code, const std::string& message) {
        return command_error("prefill", code, message);
    };
    ParsedArgs parsed;
    if (const auto done = start_command("prefill", args, prefill_options, usage, parsed))
        return *done;
    auto settings = parse_settings(parsed);
    if (!settings)
        return fail(exit_usage, settings.error().message);
    auto& s = *settings;

    // A directory: the filesystem mounted there, warmed through its free space on
    // the disk under it, which it shares with everyone (docs/design.md).
    std::optional<FilesystemTarget> fs;
    if (std::filesystem::is_directory(s.path)) {
        std::error_code ec;
        const auto real = std::filesystem::canonical(s.path, ec);
        auto found =
            find_filesystem(ec ? s.path : real.string(),
                            parse_mountinfo(read_text("/proc/self/mountinfo")), SysBlock());
        if (!found)
            return fail(exit_refused, found.error().message);
        fs = *found;
    }
    JobSpec spec;
    spec.path = fs ? "/dev/" + fs->disk : s.path;
    auto identity = identify(spec.path);
    if (!identity)
        return fail(open_failure(identity.error().err), identity.error().message);
    spec.identity = *identity;
    if (fs) {
        auto reserve = parse_reserve(s.reserve, fs->size_bytes);
        if (!reserve)
            return fail(exit_usage, "--reserve: " + reserve.error().message);
        spec.kind = FilesystemJob{*fs, *reserve};
    }
    spec.options = s.job;
    spec.options.backend_block_bytes = s.backend_block_bytes;
    spec.requested = true; // the disk held to itself, as asked by whoever runs this
    spec.strategy = s.strategy;
    spec.probe = true; // the probes choose the plan and prove the outcome
    spec.backend_block_explicit = s.backend_block_explicit;
    spec.chunk_explicit = s.chunk_explicit;
    spec.io_engine = s.io;

    Console console(s.json);
    const EventSink events = [&](EventLevel level, const std::string& message) {
        console.message((level == EventLevel::warning ? "warning: " : "") + message);
    };
    auto work = open_work(spec, events);
    if (!work)
        return fail(open_failure(work.error().err), work.error().message);
    if (!s.job.checkpoint_path.empty()) {
        // A checkpoint of another disk or mode is the caller's mistake: say so now.
        auto loaded = load_checkpoint(s.job.checkpoint_path);
        if (loaded && *loaded)
            if (auto fits =
                    checkpoint_fits(**loaded, spec.identity,
                                    (*work)->device().geometry().size_bytes, to_string(s.job.mode));
                !fits)
                return fail(exit_usage, s.job.checkpoint_path + ": " + fits.error().message);
    }
    // A deadline the whole disk cannot make at --rate: refused before a byte is
    // written. A filesystem's free space is known only once its job plans.
    if (s.within_s && !fs)
        if (auto fits = check_deadline((*work)->device().geometry().size_bytes, *s.within_s,
                                       s.job.rate_bytes_per_s, "--rate");
            !fits)
            return fail(row_of(Refusal::deadline_too_near).ctl_exit, fits.error().message);
    // Paced from its first chunk: the whole device's need, until the pacer has the job's.
    if (s.within_s) {
        const Deadline whole{0, static_cast<int64_t>(*s.within_s),
                             (*work)->device().geometry().size_bytes};
        spec.options.rate_bytes_per_s =
            pace_deadline(whole, 0, 0, s.job.rate_bytes_per_s).rate_bytes_per_s;
    }
    auto job = JobRunner::set_up(spec, std::move(*work), events);
    if (!job)
        return fail(job.error().err == -EINVAL ? exit_usage : exit_failed, job.error().message);
    return run_job(**job, s, console);
}

} // namespace prewarmd
