#include "cli/prefill_command.hh"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
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
#include "discovery/identity.hh"
#include "discovery/udev.hh"
#include "engine/checkpoint.hh"
#include "engine/fs_source.hh"
#include "engine/job.hh"
#include "engine/plan.hh"
#include "io/device.hh"
#include "io/free_space.hh"
#include "io/open_watch.hh"
#include "measurement/probe.hh"
#include "safety/filesystem.hh"
#include "safety/system.hh"

namespace prewarmd {
namespace {

constexpr OptionSpec prefill_options[] = {
    {"mode", 0, "MODE",
     "zero (default): write zeros over blocks that read all-zero;\n"
     "rewrite: write back what was read (clones); read: only read"},
    {"rate", 0, "RATE", "at most this fast, e.g. 50MiB/s (default unlimited)"},
    {"burst", 0, "SIZE", "what the throttle lets through at once (default one chunk)"},
    {"queue-depth", 0, "N", "chunks in flight, 1 to 64 (default 8)"},
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
           "Exit status:\n"
           "  0    done                      4    detached: the device went away\n"
           "  1    failed: an I/O error      5    paused: the backend is full (ENOSPC)\n"
           "  2    bad usage or input        6    refused: in use, or read-only\n"
           "  3    stepped aside: another    130  stopped by SIGINT (143: SIGTERM)\n"
           "       process opened or wrote\n"
           "       to the disk\n";
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
};

Result<Settings> parse_settings(const ParsedArgs& args) {
    Settings s;
    const auto bad = [](const std::string& message) { return Error{-EINVAL, message}; };
    if (args.positional.size() != 1)
        return bad(args.positional.empty() ? "no PATH given (see --help)"
                                           : "one PATH only, not '" + args.positional[1] + "'");
    s.path = args.positional[0];
    if (const auto mode = args.value("mode")) {
        const auto parsed = parse_mode(*mode);
        if (!parsed)
            return bad("--mode: '" + *mode + "' is not zero, rewrite or read");
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
        const auto strategy = parse_strategy(*text);
        if (!strategy)
            return bad("--strategy: '" + *text + "' is not auto, full or sparse");
        s.strategy = *strategy;
    }
    if (const auto text = args.value("rate")) {
        auto rate = parse_rate(*text);
        if (!rate)
            return bad("--rate: " + rate.error().message);
        if (*rate == 0)
            return bad("--rate: must be positive (leave it out for no limit)");
        s.job.rate_bytes_per_s = *rate;
    }
    if (const auto text = args.value("queue-depth")) {
        auto depth = parse_count(*text, 1, 64);
        if (!depth)
            return bad("--queue-depth: " + depth.error().message);
        s.job.queue_depth = static_cast<unsigned>(*depth);
    }
    if (const auto text = args.value("io-engine")) {
        if (*text == "auto")
            s.io = IoEngineKind::automatic;
        else if (*text == "uring")
            s.io = IoEngineKind::uring;
        else if (*text == "sync")
            s.io = IoEngineKind::sync;
        else
            return bad("--io-engine: '" + *text + "' is not auto, uring or sync");
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

// Runs the job on its own thread; this one takes signals and draws progress.
int run_job(PrefillJob& job, const Settings& settings, Console& console) {
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
    const auto refresh = console.tty() ? std::chrono::milliseconds(200) : std::chrono::seconds(5);
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
        if (sig != SIGUSR1)
            console.progress(settings.path, s);
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
        std::printf("%s\n", json_text(out, 2).c_str());
    } else {
        std::fputs(summary_text(settings.path, result).c_str(), stdout);
    }
    switch (result.status) {
    case JobStatus::done:
        return exit_done;
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
Result<std::string> identify(const Device& device) {
    if (!device.geometry().is_block_device) {
        std::error_code ec;
        const auto real = std::filesystem::canonical(device.path(), ec);
        return file_identity(ec ? device.path() : real.string(), device.geometry().size_bytes);
    }
    auto udev = Udev::open();
    if (!udev)
        return udev.error();
    auto disk = udev->device(device.devnum());
    if (!disk)
        return disk.error();
    return disk_identity(*disk);
}

// The job on its device, with its I/O engine.
int run_prepared(const Settings& s, Device& device, JobTarget target, Console& console) {
    std::string note;
    auto engine = make_io_engine(s.io, device.fd(), s.job.queue_depth, note);
    if (!engine)
        return command_error("prefill", exit_failed, engine.error().message);
    if (!note.empty())
        console.message(note);
    PrefillJob job(s.job, std::move(target), std::move(*engine), device,
                   [&](EventLevel level, const std::string& message) {
                       console.message((level == EventLevel::warning ? "warning: " : "") + message);
                   });
    return run_job(job, s, console);
}

// Sparse where the probe proves one write per block enough (or where asked), then
// the proof: places in the middle of blocks the job wrote only at their start must
// be warm. Not so: full writes after all (auto), or a failure saying why (sparse).
int run_sparse(Settings s, Device& device, JobTarget target, Console& console) {
    const auto fail = [](int code, const std::string& message) {
        return command_error("prefill", code, message);
    };
    // The probe writes too: it stops for others as the job does.
    ProbeOptions options;
    if (target.opens && target.who_else)
        options.someone_else = [&target] {
            return target.opens->seen() ? target.who_else() : std::string();
        };
    auto cold = probe_cold(device, options);
    if (!cold) {
        if (s.strategy == Strategy::sparse)
            return fail(exit_failed, "probe: " + cold.error().message +
                                         ": sparse warming cannot be proven here");
        console.message("probe: " + cold.error().message + ": full writes");
        return run_prepared(s, device, std::move(target), console);
    }
    if (s.strategy == Strategy::automatic && cold->allocation != Allocation::whole_block) {
        console.message("full writes: the probe found " + std::string(to_string(cold->allocation)) +
                        " allocation (" + cold->allocation_note + ")");
        return run_prepared(s, device, std::move(target), console);
    }
    const uint64_t step = s.backend_block_explicit || !cold->granularity_bytes
                              ? s.backend_block_bytes
                              : cold->granularity_bytes;
    const uint64_t piece =
        std::max<uint64_t>(probe_io_bytes, device.geometry().logical_block_bytes);
    console.message("sparse: one " + format_size(piece) + " write per " + format_size(step) +
                    " block (" + cold->allocation_note + ")");
    JobTarget full = target;
    target.source = [regions = target.regions, last = target.last, step, piece](
                        const RangeSet& done, uint64_t) -> Result<std::unique_ptr<ChunkSource>> {
        return std::unique_ptr<ChunkSource>(
            std::make_unique<SparseQueue>(regions, step, piece, done, last));
    };
    const int sparse = run_prepared(s, device, std::move(target), console);
    if (sparse != exit_done)
        return sparse;

    auto warm = probe_warm(device, cold->strides, {}, step / 2);
    if (!warm)
        return fail(exit_failed, "probe after: " + warm.error().message);
    if (!still_cold(*cold, *warm)) {
        console.message("probe after: the middle of the blocks is warm (" +
                        format_ratio(warm->ratio_p50) + " a place written before)");
        return exit_done;
    }
    const std::string why = "the middle of the blocks is still cold after sparse writes (" +
                            format_ratio(warm->ratio_p50) + " a place written before)";
    if (s.strategy == Strategy::sparse)
        return fail(exit_failed, why);
    console.message(why + ": full writes after all");
    s.job.checkpoint_path.clear(); // the sparse one covers every block
    return run_prepared(s, device, std::move(full), console);
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

// Free space claimed through the filesystem, in a file that goes with the job (or
// with the process, however it ends: io/free_space.hh); sparse where the probe in
// the claim proves it enough (engine/fs_source.hh).
std::function<Result<std::unique_ptr<ChunkSource>>(const RangeSet&, uint64_t)>
filesystem_source(const FilesystemTarget& fs, uint64_t reserve, const Settings& s,
                  const Device& device, Console& console) {
    return
        [fs, reserve, backend_block = s.backend_block_bytes, strategy = s.strategy, &device,
         &console](const RangeSet& done, uint64_t chunk) -> Result<std::unique_ptr<ChunkSource>> {
            auto file = FreeSpaceFile::open(fs.mount_point, fs.devnum);
            if (!file)
                return file.error();
            FsSourceOptions options;
            options.disk_offset = fs.offset_bytes;
            options.backend_block = backend_block;
            options.chunk = chunk;
            options.reserve = reserve;
            auto chosen = choose_fs_strategy(device, *file, options, strategy);
            if (!chosen)
                return chosen.error();
            if (!chosen->note.empty())
                console.message(chosen->note);
            options.piece = chosen->piece;
            options.backend_block = chosen->block;
            return std::unique_ptr<ChunkSource>(std::make_unique<FsSource>(
                std::make_unique<FreeSpaceFile>(std::move(*file)), options, done));
        };
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
    auto device = Device::open(fs ? "/dev/" + fs->disk : s.path, s.job.mode == Mode::read
                                                                     ? Device::Access::read
                                                                 : fs ? Device::Access::shared_write
                                                                      : Device::Access::write);
    if (!device) {
        const int err = -device.error().err;
        const bool refused = err == EBUSY || err == EROFS || err == EACCES || err == EPERM;
        return fail(refused ? exit_refused : exit_usage, device.error().message);
    }
    const auto& geometry = device->geometry();
    auto chunk =
        choose_chunk_bytes(s.job.chunk_bytes, s.chunk_explicit, s.backend_block_bytes, geometry);
    if (!chunk)
        return fail(exit_usage, s.path + ": " + chunk.error().message);
    s.job.chunk_bytes = *chunk;
    s.job.backend_block_bytes = s.backend_block_bytes;

    auto identity = identify(*device);
    if (!identity)
        return fail(exit_failed, identity.error().message);
    if (!s.job.checkpoint_path.empty()) {
        // A checkpoint of another disk or mode is the caller's mistake: say so now.
        auto loaded = load_checkpoint(s.job.checkpoint_path);
        if (loaded && *loaded)
            if (auto fits = checkpoint_fits(**loaded, *identity, geometry.size_bytes,
                                            to_string(s.job.mode));
                !fits)
                return fail(exit_usage, s.job.checkpoint_path + ": " + fits.error().message);
    }

    Console console(s.json);
    JobTarget target;
    target.geometry = geometry;
    target.identity = *identity;
    if (fs) {
        auto reserve = parse_reserve(s.reserve, fs->size_bytes);
        if (!reserve)
            return fail(exit_usage, "--reserve: " + reserve.error().message);
        target.source = filesystem_source(*fs, *reserve, s, *device, console);
        // The filesystem writes the disk all along: the sectors counted are not ours.
        target.foreign_writes_counted = false;
        console.message("the free space of " + fs->fstype + " on " + fs->device + " at " +
                        fs->mount_point + ", keeping " + format_size(*reserve) + " available");
        if (fstrim_timer_enabled())
            console.message("note: fstrim.timer is enabled: each week it discards the free "
                            "space, which a thin backend may make cold again");
        return run_prepared(s, *device, std::move(target), console);
    }
    auto data = device->data_extents();
    if (!data)
        return fail(exit_failed, data.error().message);
    target.regions = regions_to_visit(geometry, *data);
    target.allocated_bytes = geometry.size_bytes - target.regions.total_bytes();
    // A disk written is watched for others who open it: the job steps aside for
    // them (docs/safety.md), and visits where they would start writing last.
    std::optional<OpenWatch> opens;
    if (geometry.is_block_device && s.job.mode != Mode::read) {
        auto watch = OpenWatch::watch(s.path);
        if (!watch)
            return fail(exit_failed, watch.error().message);
        opens.emplace(std::move(*watch));
        target.opens = &*opens;
        target.who_else = [disk = device->devnum()] { return someone_else(disk); };
        target.last = where_writers_start(geometry.size_bytes);
    }
    if (s.strategy == Strategy::full || s.job.mode == Mode::read || !geometry.is_block_device)
        return run_prepared(s, *device, std::move(target), console);
    return run_sparse(s, *device, std::move(target), console);
}

} // namespace prewarmd
