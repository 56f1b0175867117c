// One prefill job: visits every chunk of a disk once, pipelined up to the queue
// depth and throttled, and never changes what the disk reads back (docs/design.md):
// `zero` writes zeros only over blocks that read all-zero, `rewrite` writes back
// what it read, `read` only reads. Runs on one thread; other threads steer it with
// commands.
//
// Its phases (its runstate, as fio's), each change through set_phase():
//
//   starting -> running <-> checking          (new writes held for a write check)
//                  |            |
//                  v            v
//               pausing -> paused -> running   (chunks in flight finish first)
//   any of them -> ending -> ended             (likewise; then the checkpoint)
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/names.hh"
#include "base/unique_fd.hh"
#include "control/choices.hh"
#include "engine/checkpoint.hh"
#include "engine/plan.hh"
#include "engine/progress.hh"
#include "engine/token_bucket.hh"
#include "io/device.hh"
#include "io/io_engine.hh"
#include "io/open_watch.hh"
#include "measurement/quiet.hh"

namespace prewarmd {

struct JobOptions {
    Mode mode = Mode::zero;
    uint64_t chunk_bytes = 4 * 1024 * 1024; // as choose_chunk_bytes() made it
    // Zero mode checks each backend block of a chunk on its own: a block holding data
    // is allocated already and left alone, its all-zero neighbours are written.
    uint64_t backend_block_bytes = 2 * 1024 * 1024;
    unsigned queue_depth = 8;      // chunks in flight
    uint64_t rate_bytes_per_s = 0; // 0: unlimited
    uint64_t burst_bytes = 0;      // 0: one chunk
    bool idle_priority = true;     // I/O priority class idle
    std::string checkpoint_path;   // "": none
    std::chrono::milliseconds checkpoint_interval{5000};
    unsigned max_retries = 3; // for EIO and EAGAIN, with backoff
    std::chrono::milliseconds retry_backoff{100};
};

// What the job works on.
struct JobTarget {
    Geometry geometry;
    std::string identity;
    RangeSet regions;             // to visit (regions_to_visit())
    RangeSet last;                // of those, visited after the rest
    uint64_t allocated_bytes = 0; // outside the regions: a file's data, counted as skipped
    // Where the chunks come from instead of the regions (a filesystem's free space),
    // given what the checkpoint says is done already.
    std::function<Result<std::unique_ptr<ChunkSource>>(const RangeSet& done, uint64_t chunk)>
        source;
    // The disk's own count of sectors written is the job's and nobody else's (a
    // whole disk the job writes alone): a difference is a foreign write.
    bool foreign_writes_counted = true;
    // Opens of the disk by others: before each write the job looks, and when
    // `who_else` names someone besides readers such as udev's probes, it steps aside.
    OpenWatch* opens = nullptr;
    std::function<std::string()> who_else;
};

enum class EventLevel { info, warning };
using EventSink = std::function<void(EventLevel, const std::string&)>;

// What other threads tell a job.
struct PauseCommand {};
struct ResumeCommand {};
struct StopCommand {
    JobStatus as = JobStatus::cancelled; // how the job ends: cancelled, released, detached
    std::string reason;
};
struct RateCommand {
    uint64_t rate_bytes_per_s = 0; // 0: unlimited
    uint64_t burst_bytes = 0;      // 0: one chunk
};
struct DepthCommand {
    unsigned chunks_in_flight = 1; // 1 .. the queue depth it started with
};
using JobCommand =
    std::variant<PauseCommand, ResumeCommand, StopCommand, RateCommand, DepthCommand>;

class PrefillJob {
public:
    enum class Phase { starting, running, checking, pausing, paused, ending, ended };

    PrefillJob(const JobOptions& options, JobTarget target, std::unique_ptr<IoEngine> engine,
               const DeviceProbe& probe, EventSink events);
    ~PrefillJob();
    PrefillJob(const PrefillJob&) = delete;
    PrefillJob& operator=(const PrefillJob&) = delete;

    // Runs on the calling thread until the job ends (done, failed, detached,
    // stepped aside) or is stopped; returns the final snapshot. A pause, asked for or
    // forced (ENOSPC: the backend is full), keeps it inside, waiting.
    ProgressSnapshot run();
    // Before run(), on the thread that runs it: the backend block a probe found.
    void set_backend_block(uint64_t bytes) { m_backend_block = bytes; }
    // Before run(): zero mode writes this byte where a block reads all-zero, in place
    // of zeros (a filesystem's claimed free space on a backend that discards zero
    // writes; docs/design.md). 0: zeros, as read.
    void set_fill(unsigned char byte) { m_fill = byte; }
    // Before run(): the probes made for the job, kept in its checkpoint, so that a
    // resumed job can still be proven (its cold probe is the one before it wrote).
    void set_probe(ProbeFigures probe) { m_figures = std::move(probe); }

    // From any thread; takes effect within one completion or timer tick. None leaves
    // a chunk half done: chunks in flight finish, and the checkpoint is saved.
    void command(JobCommand command);
    ProgressSnapshot snapshot() const;

private:
    struct Slot;
    struct Buffers;

    void set_phase(Phase phase);
    bool start(Clock::time_point now);
    void take_commands(Clock::time_point now);
    void obey(const JobCommand& command, Clock::time_point now);
    void issue(Clock::time_point now);
    void submit(Slot& slot, IoOp op, Clock::time_point now);
    void complete(Slot& slot, int64_t result, Clock::time_point now);
    void read_done(Slot& slot, Clock::time_point now);
    void start_write(Slot& slot, const Extent& run, Clock::time_point now);
    void write_if_alone(Slot& slot, Clock::time_point now);
    void io_error(Slot& slot, int err, Clock::time_point now);
    void finish_chunk(Slot& slot, Clock::time_point now);
    void release_buffer(Slot& slot);
    void visit_again(Slot& slot);
    void abandon_held();
    bool work_left();
    size_t writes_in_flight() const;
    void finish_write_check(Clock::time_point now);
    void abort_io(const std::string& reason);
    bool giving_up() const;
    bool writing_allowed() const;
    bool others_arrived();
    void maybe_flush(Clock::time_point now);
    void flushed(int64_t result);
    void save(bool complete);
    void check_foreign_writes();
    std::string foreign_writes() const;
    void end(JobStatus as, std::string reason);
    void pause_for(std::string reason);
    std::optional<Clock::time_point> deadline(Clock::time_point now) const;
    void publish(Clock::time_point now);
    void emit(EventLevel level, const std::string& message) const;
    size_t in_flight() const;
    bool drained() const { return in_flight() == 0 && !m_flushing; }

    const JobOptions m_options;
    uint64_t m_backend_block; // the options' unless a probe found it
    unsigned char m_fill = 0;
    ProbeFigures m_figures;
    const JobTarget m_target;
    std::unique_ptr<IoEngine> m_engine;
    const DeviceProbe& m_probe;
    EventSink m_events;
    UniqueFd m_wake;

    // Commands from other threads.
    mutable std::mutex m_command_mutex;
    std::vector<JobCommand> m_commands;

    // The job thread's own state.
    ProbeQuiet& m_quiet = ProbeQuiet::process(); // new I/O waits while a probe holds it
    bool m_busy = false;                         // I/O in flight, as m_quiet was told
    Phase m_phase = Phase::starting;
    JobStatus m_end = JobStatus::failed; // once ending: how
    std::string m_end_reason;
    std::string m_pause_reason;
    std::unique_ptr<Buffers> m_buffers;
    std::vector<Slot> m_slots;
    size_t m_depth_cap = SIZE_MAX; // DepthCommand: the slots used at most
    std::vector<int> m_free_buffers;
    std::unique_ptr<ChunkSource> m_source;
    std::optional<Clock::time_point> m_source_tick; // when the source wants to run
    RangeSet m_done;                                // flushed: in the checkpoint
    std::vector<Extent> m_pending;                  // completed, not yet flushed
    std::optional<std::vector<Extent>> m_flushing;  // completed before the fsync in flight
    TokenBucket m_bucket;
    std::optional<Clock::time_point> m_throttled_until;
    Clock::time_point m_last_flush;
    Clock::time_point m_next_tick;
    Clock::time_point m_next_check; // for foreign writes
    std::optional<uint64_t> m_base_sectors;
    uint64_t m_submitted_write_bytes = 0;
    Checkpoint m_previous; // counters of earlier runs

    // Measurements, published in snapshots.
    Clock::time_point m_started;
    RateWindow m_window;
    LatencyHistogram m_latency;
    uint64_t m_total_bytes = 0;
    uint64_t m_resumed_bytes = 0;
    uint64_t m_visited_bytes = 0; // this run
    uint64_t m_written_bytes = 0;
    uint64_t m_read_bytes = 0;
    uint64_t m_skipped_bytes = 0;

    mutable std::mutex m_snapshot_mutex;
    ProgressSnapshot m_snapshot;
};

inline constexpr std::array<Named<PrefillJob::Phase>, 7> phase_names{{
    {PrefillJob::Phase::starting, "starting"},
    {PrefillJob::Phase::running, "running"},
    {PrefillJob::Phase::checking, "checking"},
    {PrefillJob::Phase::pausing, "pausing"},
    {PrefillJob::Phase::paused, "paused"},
    {PrefillJob::Phase::ending, "ending"},
    {PrefillJob::Phase::ended, "ended"},
}};
static_assert(names_in_order(phase_names, PrefillJob::Phase::ended));
constexpr std::span<const Named<PrefillJob::Phase>> names_of(PrefillJob::Phase) {
    return phase_names;
}

} // namespace prewarmd
