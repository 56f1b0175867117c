#include "scheduler/disk_job_host.hh"

#include <fcntl.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include "base/sysfs.hh"
#include "base/unique_fd.hh"
#include "base/units.hh"
#include "engine/checkpoint.hh"
#include "engine/fs_source.hh"
#include "engine/plan.hh"
#include "io/device.hh"
#include "io/free_space.hh"
#include "io/open_watch.hh"
#include "measurement/probe.hh"
#include "safety/filesystem.hh"
#include "safety/system.hh"

namespace prewarmd {
namespace {

using EngineFactory = std::function<Result<std::unique_ptr<IoEngine>>()>;

// A PrefillJob on its own thread, with the disk it holds open; the probes around
// it on the same thread, under the same open. On a disk it shares, the job and the
// probes step aside when someone else opens it. Sparse where the strategy and the
// probe say so, proven after; not proven under "auto": full writes after all, a
// second PrefillJob in the first one's place.
class ThreadJob final : public RunningJob {
public:
    ThreadJob(Device device, std::optional<OpenWatch> opens, const JobSpec& spec, JobTarget target,
              EngineFactory make_engine, std::unique_ptr<IoEngine> engine, EventSink events,
              std::function<void()> on_finished)
        : m_device(std::move(device)), m_opens(std::move(opens)), m_events(events),
          m_make_engine(std::move(make_engine)), m_probe(spec.probe_before),
          m_target(strategic(watched(std::move(target)))),
          m_job(std::make_unique<PrefillJob>(spec.options, m_target, std::move(engine), m_device,
                                             events)),
          m_thread([this, spec, done = std::move(on_finished)] {
              if (probe_before(spec)) {
                  m_final = m_job->run();
                  if (m_final.status == JobStatus::done && m_sparse_step)
                      prove_sparse(spec);
                  else if (m_final.status == JobStatus::done)
                      probe_after(spec);
              }
              m_finished = true;
              done();
          }) {}
    ~ThreadJob() override {
        if (m_thread.joinable()) {
            command(StopCommand{JobStatus::cancelled, "the daemon is stopping"});
            m_thread.join();
        }
    }

    ProgressSnapshot snapshot() const override {
        std::lock_guard lock(m_job_mutex);
        return m_job->snapshot();
    }
    void command(JobCommand command) override {
        std::lock_guard lock(m_job_mutex);
        if (std::holds_alternative<StopCommand>(command))
            m_stopped = true; // no full pass after a sparse one, then
        m_job->command(std::move(command));
    }
    bool finished() const override { return m_finished; }
    ProbeFigures probe() const override {
        std::lock_guard lock(m_probe_mutex);
        return m_probe;
    }
    ProgressSnapshot wait() override {
        if (m_thread.joinable())
            m_thread.join();
        return m_final;
    }

private:
    // Chunks as the strategy turns out once the probe has spoken (on this thread,
    // before the job starts): one piece per block, or every byte.
    JobTarget strategic(JobTarget target) {
        target.source = [this, regions = target.regions, last = target.last](
                            const RangeSet& done,
                            uint64_t chunk) -> Result<std::unique_ptr<ChunkSource>> {
            if (const uint64_t step = m_sparse_step)
                return std::unique_ptr<ChunkSource>(
                    std::make_unique<SparseQueue>(regions, step, sparse_piece(), done, last));
            return std::unique_ptr<ChunkSource>(
                std::make_unique<ChunkQueue>(ChunkPlan(regions, chunk, done, last)));
        };
        return target;
    }

    uint64_t sparse_piece() const {
        return std::max<uint64_t>(probe_io_bytes, m_device.geometry().logical_block_bytes);
    }

    // Sparse or full: forced, or proven by a cold probe taken now (a resumed job,
    // with no fresh probe, writes every byte: never less warm).
    void choose_strategy(const JobSpec& spec, bool probed_now) {
        if (spec.options.mode == Mode::read || spec.strategy == Strategy::full)
            return;
        const auto& cold = m_probe.cold;
        const bool proven = probed_now && cold && cold->allocation == Allocation::whole_block;
        if (spec.strategy == Strategy::automatic && !proven) {
            if (probed_now && cold)
                m_events(EventLevel::info, "full writes: the probe found " +
                                               std::string(to_string(cold->allocation)) +
                                               " allocation (" + cold->allocation_note + ")");
            return;
        }
        // The probe's granularity where it found one: the block a first write warms.
        const uint64_t step = cold && cold->granularity_bytes ? cold->granularity_bytes
                                                              : spec.options.backend_block_bytes;
        m_sparse_step = step;
        m_events(EventLevel::info, "sparse: one " + format_size(sparse_piece()) + " write per " +
                                       format_size(step) + " block" +
                                       (proven ? " (" + cold->allocation_note + ")"
                                               : " (strategy = \"sparse\", not probed)"));
    }

    // After a sparse job: the middle of blocks it wrote only at their start must be
    // warm. Not so: "sparse" fails saying so; "auto" writes every byte after all.
    void prove_sparse(const JobSpec& spec) {
        if (!m_probe.cold) {
            m_events(EventLevel::warning, "sparse writes not proven: no cold probe to compare");
            return;
        }
        auto warm = probe_warm(m_device, m_probe.cold->strides,
                               m_opens ? SomeoneElse([this] { return arrived(); }) : SomeoneElse(),
                               m_sparse_step / 2);
        if (!warm) {
            m_events(EventLevel::warning, "probe after: " + warm.error().message);
            return;
        }
        {
            std::lock_guard lock(m_probe_mutex);
            m_probe.warm = *warm;
        }
        if (!still_cold(*m_probe.cold, *warm)) {
            m_events(EventLevel::info, "probe after: the middle of the blocks is warm (" +
                                           format_ratio(warm->ratio_p50) +
                                           " a place written before)");
            return;
        }
        const std::string why = "the middle of the blocks is still cold after sparse writes (" +
                                format_ratio(warm->ratio_p50) + " a place written before)";
        if (spec.strategy == Strategy::sparse) {
            m_final.status = JobStatus::failed;
            m_final.reason = why;
            m_events(EventLevel::warning, why);
            return;
        }
        m_events(EventLevel::warning, why + ": full writes after all");
        auto engine = m_make_engine();
        if (!engine) {
            m_final.status = JobStatus::failed;
            m_final.reason = why + "; full writes could not start: " + engine.error().message;
            return;
        }
        {
            std::lock_guard lock(m_job_mutex);
            if (m_stopped)
                return;
            // The sparse job's checkpoint covers every block: the full one starts afresh.
            std::error_code ec;
            std::filesystem::remove(spec.options.checkpoint_path, ec);
            m_sparse_step = 0;
            m_job = std::make_unique<PrefillJob>(spec.options, m_target, std::move(*engine),
                                                 m_device, m_events);
        }
        m_final = m_job->run();
        if (m_final.status == JobStatus::done)
            probe_after(spec);
    }

    // The job's target, with the watch of others' opens where the disk is shared.
    JobTarget watched(JobTarget target) {
        if (m_opens) {
            target.opens = &*m_opens;
            target.who_else = [disk = m_device.devnum()] { return someone_else(disk); };
        }
        return target;
    }

    // Whether someone else has come since the last look (the probe's question).
    std::string arrived() {
        return m_opens && m_opens->seen() ? someone_else(m_device.devnum()) : std::string();
    }

    // A job from nothing gets a cold probe (a resumed one has written already; one
    // made in a filesystem job's claim has no strides for a warm probe to follow);
    // with backend_block = "auto", its granularity becomes the backend block. False
    // when someone else came meanwhile: the job steps aside before it starts.
    bool probe_before(const JobSpec& spec) {
        const bool writes = spec.options.mode != Mode::read;
        const auto checkpoint = load_checkpoint(spec.options.checkpoint_path);
        const bool fresh = !(m_probe.cold && m_probe.cold->strides) && !(checkpoint && *checkpoint);
        bool probed_now = false;
        if (spec.probe && writes && fresh) {
            if (const auto who = m_opens ? someone_else(m_device.devnum()) : std::string();
                !who.empty()) {
                step_aside("the disk is open by " + who);
                return false;
            }
            ProbeOptions options;
            if (m_opens)
                options.someone_else = [this] { return arrived(); };
            auto cold = probe_cold(m_device, options);
            if (!cold && cold.error().err == -EBUSY) {
                step_aside(cold.error().message.substr(std::string("stopped: ").size()));
                return false;
            }
            if (!cold) {
                m_events(EventLevel::warning, "probe: " + cold.error().message + ": not probed");
            } else {
                m_events(EventLevel::info,
                         "probe: first writes p50 " + format_ms(cold->cold.p50_s) + ", p99 " +
                             format_ms(cold->cold.p99_s) + ", written again p50 " +
                             format_ms(cold->rewrite.p50_s) + "; granularity " +
                             (cold->granularity_bytes ? format_size(cold->granularity_bytes)
                                                      : std::string("unknown")));
                std::lock_guard lock(m_probe_mutex);
                m_probe.cold = *cold;
                probed_now = true;
            }
        }
        if (spec.backend_block_auto) {
            const uint64_t found = m_probe.cold && m_probe.cold->granularity_bytes
                                       ? m_probe.cold->granularity_bytes
                                       : 2ULL << 20;
            const uint64_t block = std::min(found, spec.options.chunk_bytes);
            m_job->set_backend_block(block);
            m_events(EventLevel::info, "backend block " + format_size(block) +
                                           (m_probe.cold && m_probe.cold->granularity_bytes
                                                ? " (as probed)"
                                                : " (the probe could not tell)"));
        }
        choose_strategy(spec, probed_now);
        return true;
    }

    void step_aside(std::string why) {
        m_final.status = JobStatus::stepped_aside;
        m_final.reason = std::move(why);
        m_events(EventLevel::info, "stepping aside before the job: " + m_final.reason);
    }

    // Done: the warm places, and whether the warming stuck.
    void probe_after(const JobSpec& spec) {
        if (!spec.probe || !m_probe.cold)
            return;
        auto warm = probe_warm(m_device, m_probe.cold->strides,
                               m_opens ? SomeoneElse([this] { return arrived(); }) : SomeoneElse());
        if (!warm) {
            m_events(EventLevel::warning, "probe after: " + warm.error().message);
            return;
        }
        const bool stuck = !still_cold(*m_probe.cold, *warm);
        m_events(stuck ? EventLevel::info : EventLevel::warning,
                 stuck ? "probe after: warm places p50 " + format_ms(warm->warm.p50_s) + ", " +
                             format_ratio(penalty_ratio(m_probe.cold->cold, warm->warm)) +
                             " faster than cold"
                       : "probe after: warming did not stick: the warm places still write " +
                             format_ratio(warm->ratio_p50) +
                             " slower than places written before (a backend that drops zero "
                             "writes?)");
        std::lock_guard lock(m_probe_mutex);
        m_probe.warm = *warm;
    }

    Device m_device; // closed when the job is gone, and its exclusive open (if any) with it
    std::optional<OpenWatch> m_opens;
    EventSink m_events;
    EngineFactory m_make_engine;
    mutable std::mutex m_probe_mutex;
    ProbeFigures m_probe;
    std::atomic<uint64_t> m_sparse_step{0}; // 0: full writes
    JobTarget m_target;
    mutable std::mutex m_job_mutex; // m_job is replaced once, for full writes after sparse
    bool m_stopped = false;
    std::unique_ptr<PrefillJob> m_job;
    ProgressSnapshot m_final;
    std::atomic<bool> m_finished{false};
    std::thread m_thread;
};

// A filesystem job: a PrefillJob over the free space it claims, on its own
// thread. No probe of the disk (its writes could meet the filesystem's own):
// where the strategy allows sparse writes, the probe is made in the claim as the
// job starts, and kept as its cold probe (engine/fs_source.hh).
class FilesystemJob final : public RunningJob {
public:
    FilesystemJob(Device device, const JobSpec& spec, FreeSpaceFile claim, FsSourceOptions options,
                  JobTarget target, std::unique_ptr<IoEngine> engine, EventSink events,
                  std::function<void()> on_finished)
        : m_device(std::move(device)), m_events(events), m_claim(std::move(claim)),
          m_options(options),
          // Sparse only where proven, and the probe is a setting ([prefill] probe).
          m_strategy(spec.probe || spec.strategy != Strategy::automatic ? spec.strategy
                                                                        : Strategy::full),
          m_job(spec.options, sourced(std::move(target)), std::move(engine), m_device,
                std::move(events)),
          m_thread([this, done = std::move(on_finished)] {
              m_final = m_job.run();
              m_finished = true;
              done();
          }) {}
    ~FilesystemJob() override {
        if (m_thread.joinable()) {
            command(StopCommand{JobStatus::cancelled, "the daemon is stopping"});
            m_thread.join();
        }
    }

    ProgressSnapshot snapshot() const override { return m_job.snapshot(); }
    void command(JobCommand command) override { m_job.command(std::move(command)); }
    bool finished() const override { return m_finished; }
    ProbeFigures probe() const override {
        std::lock_guard lock(m_probe_mutex);
        return m_probe;
    }
    ProgressSnapshot wait() override {
        if (m_thread.joinable())
            m_thread.join();
        return m_final;
    }

private:
    // The chunks, once the strategy is chosen in the claim (on the job's thread).
    JobTarget sourced(JobTarget target) {
        target.source = [this](const RangeSet& done,
                               uint64_t chunk) -> Result<std::unique_ptr<ChunkSource>> {
            if (!m_claim)
                return Error{-EALREADY, "the claim was taken already"};
            auto strategy = choose_fs_strategy(m_device, *m_claim, m_options, m_strategy);
            if (!strategy)
                return strategy.error();
            if (!strategy->note.empty())
                m_events(EventLevel::info, strategy->note);
            {
                std::lock_guard lock(m_probe_mutex);
                m_probe.cold = strategy->probe;
            }
            FsSourceOptions o = m_options;
            o.chunk = chunk;
            o.piece = strategy->piece;
            o.backend_block = strategy->block;
            auto file = std::make_unique<FreeSpaceFile>(std::move(*m_claim));
            m_claim.reset();
            return std::unique_ptr<ChunkSource>(
                std::make_unique<FsSource>(std::move(file), o, done));
        };
        return target;
    }

    Device m_device;
    EventSink m_events;
    std::optional<FreeSpaceFile> m_claim; // until the job's source takes it
    FsSourceOptions m_options;
    Strategy m_strategy;
    mutable std::mutex m_probe_mutex;
    ProbeFigures m_probe;
    PrefillJob m_job;
    ProgressSnapshot m_final;
    std::atomic<bool> m_finished{false};
    std::thread m_thread;
};

} // namespace

DiskJobHost::DiskJobHost(const Config& config, std::function<void(bool, const std::string&)> log)
    : m_config(config), m_log(std::move(log)) {}

Classification DiskJobHost::look(const DiskInfo& disk) {
    // Read-only and shared: a look must not make anyone's mkfs fail.
    UniqueFd fd(::open(disk.devnode.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (!fd) {
        Classification c;
        c.reasons.push_back("cannot open " + disk.devnode + ": " + std::strerror(errno));
        return c;
    }
    return classify(disk, fd.get(), SystemView::read());
}

ProtectedDisks DiskJobHost::protected_disks() {
    const auto system = SystemView::read();
    return find_protected_disks(system.mounts, system.swaps, system.sys);
}

std::vector<Result<FilesystemTarget>> DiskJobHost::filesystems_on(const DiskInfo& disk) {
    return filesystems_on_disk(disk.name, parse_mountinfo(read_text(system_mountinfo_path())),
                               SysBlock());
}

Result<std::unique_ptr<RunningJob>> DiskJobHost::start(const DiskInfo& disk, const JobSpec& spec,
                                                       std::function<void()> on_finished) {
    if (spec.filesystem)
        return start_filesystem(disk, spec, std::move(on_finished));
    // A job asked for keeps the disk to itself; one taken up by itself shares it, and
    // steps aside for whoever comes (docs/safety.md).
    const bool writes = spec.options.mode != Mode::read;
    auto device = Device::open(disk.devnode, !writes          ? Device::Access::read
                                             : spec.requested ? Device::Access::write
                                                              : Device::Access::shared_write);
    if (!device)
        return device.error();
    std::optional<OpenWatch> opens;
    if (writes) {
        auto watch = OpenWatch::watch(disk.devnode);
        if (!watch)
            return watch.error();
        opens.emplace(std::move(*watch));
    }
    // The decision was about the disk of a udev event; this must be that disk.
    if (disk.diskseq && device->diskseq() && disk.diskseq != device->diskseq())
        return Error{-ESTALE, disk.devnode + " is another disk now (sequence number " +
                                  std::to_string(device->diskseq()) + ", not " +
                                  std::to_string(disk.diskseq) + ")"};
    const auto verdict = classify(disk, device->fd(), SystemView::read());
    const bool allowed = verdict.verdict == Verdict::eligible ||
                         (verdict.verdict == Verdict::needs_request && spec.requested);
    if (!allowed)
        return Error{-EBUSY,
                     std::string(to_string(verdict.verdict)) + ": " + verdict.reasons_text()};

    JobOptions options = spec.options;
    auto chunk = choose_chunk_bytes(options.chunk_bytes, m_config.chunk_set,
                                    options.backend_block_bytes, device->geometry());
    if (!chunk)
        return chunk.error();
    options.chunk_bytes = *chunk;
    std::string note;
    auto engine = make_io_engine(m_config.io_engine, device->fd(), options.queue_depth, note);
    if (!engine)
        return engine.error();
    EngineFactory make_engine = [kind = m_config.io_engine, fd = device->fd(),
                                 depth = options.queue_depth]() {
        std::string unused;
        return make_io_engine(kind, fd, depth, unused);
    };
    if (!note.empty())
        m_log(true, spec.identity + ": " + note);

    JobTarget target;
    target.geometry = device->geometry();
    target.identity = spec.identity;
    target.regions.add(0, target.geometry.size_bytes);
    target.last = where_writers_start(target.geometry.size_bytes);
    auto log = m_log;
    const auto identity = spec.identity;
    JobSpec run = spec;
    run.options = options;
    return std::unique_ptr<RunningJob>(new ThreadJob(
        std::move(*device), std::move(opens), run, std::move(target), std::move(make_engine),
        std::move(*engine),
        [log, identity](EventLevel level, const std::string& message) {
            log(level == EventLevel::warning, identity + ": " + message);
        },
        std::move(on_finished)));
}

// The disk shared with its filesystem (no exclusive open: it is mounted); chunks
// from the free space claimed through the filesystem, as the system mounted it.
Result<std::unique_ptr<RunningJob>>
DiskJobHost::start_filesystem(const DiskInfo& disk, const JobSpec& spec,
                              std::function<void()> on_finished) {
    const auto& fs = *spec.filesystem;
    if (spec.options.mode == Mode::read)
        return Error{-EINVAL, "a filesystem job writes: mode \"read\" has nothing to do"};
    auto device = Device::open(disk.devnode, Device::Access::shared_write);
    if (!device)
        return device.error();
    if (disk.diskseq && device->diskseq() && disk.diskseq != device->diskseq())
        return Error{-ESTALE, disk.devnode + " is another disk now"};
    JobOptions options = spec.options;
    auto chunk = choose_chunk_bytes(options.chunk_bytes, m_config.chunk_set,
                                    options.backend_block_bytes, device->geometry());
    if (!chunk)
        return chunk.error();
    options.chunk_bytes = *chunk;
    std::string note;
    auto engine = make_io_engine(m_config.io_engine, device->fd(), options.queue_depth, note);
    if (!engine)
        return engine.error();
    if (!note.empty())
        m_log(true, spec.identity + ": " + note);
    // The claim is made now, on this thread: a filesystem gone since it was seen
    // is an error of the start.
    auto claim = FreeSpaceFile::open(system_root() + fs.mount_point, fs.devnum);
    if (!claim)
        return claim.error();

    JobTarget target;
    target.geometry = device->geometry();
    target.identity = spec.identity;
    // The filesystem writes the disk all along: the sectors counted are not ours.
    target.foreign_writes_counted = false;
    FsSourceOptions o;
    o.disk_offset = fs.offset_bytes;
    o.backend_block = options.backend_block_bytes;
    o.reserve = spec.reserve_bytes;
    const auto log = m_log;
    const auto identity = spec.identity;
    log(false, identity + ": the free space of " + fs.fstype + " on " + fs.device + " at " +
                   fs.mount_point + ", keeping " + format_size(spec.reserve_bytes) + " available" +
                   (fstrim_timer_enabled()
                        ? "; note: fstrim.timer is enabled: each week it discards the free space, "
                          "which a thin backend may make cold again"
                        : ""));
    JobSpec run = spec;
    run.options = options;
    return std::unique_ptr<RunningJob>(new FilesystemJob(
        std::move(*device), run, std::move(*claim), o, std::move(target), std::move(*engine),
        [log, identity](EventLevel level, const std::string& message) {
            log(level == EventLevel::warning, identity + ": " + message);
        },
        std::move(on_finished)));
}

Result<ProbeFigures> probe_disk(const DiskInfo& disk, const ProbeFigures& before) {
    auto device = Device::open(disk.devnode, Device::Access::write);
    if (!device)
        return device.error();
    if (disk.diskseq && device->diskseq() && disk.diskseq != device->diskseq())
        return Error{-ESTALE, disk.devnode + " is another disk now"};
    const auto verdict = classify(disk, device->fd(), SystemView::read());
    if (verdict.verdict == Verdict::refused)
        return Error{-EBUSY, "refused: " + verdict.reasons_text()};
    ProbeFigures after = before;
    if (before.cold) {
        auto warm = probe_warm(*device, before.cold->strides);
        if (!warm)
            return warm.error();
        after.warm = *warm;
    } else {
        auto cold = probe_cold(*device, ProbeOptions{});
        if (!cold)
            return cold.error();
        after.cold = *cold;
    }
    return after;
}

} // namespace prewarmd
