// One prefill job: visits every chunk of a disk once, pipelined up to the queue
// depth and throttled, and never changes what the disk reads back (design.md):
// `zero` writes zeros only over chunks that read all-zero, `rewrite` writes back
// what it read, `read` only reads. Runs on one thread; other threads steer it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/unique_fd.hh"
#include "engine/checkpoint.hh"
#include "engine/mode.hh"
#include "engine/plan.hh"
#include "engine/token_bucket.hh"
#include "io/device.hh"
#include "io/io_engine.hh"
#include "measurement/progress.hh"

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
    uint64_t allocated_bytes = 0; // outside the regions: a file's data, counted as skipped
};

enum class EventLevel { info, warning };
using EventSink = std::function<void(EventLevel, const std::string&)>;

class PrefillJob {
public:
    PrefillJob(const JobOptions& options, JobTarget target, std::unique_ptr<IoEngine> engine,
               const DeviceProbe& probe, EventSink events);
    ~PrefillJob();
    PrefillJob(const PrefillJob&) = delete;
    PrefillJob& operator=(const PrefillJob&) = delete;

    // Runs on the calling thread until the job ends (done, failed, detached,
    // interrupted) or is stopped; returns the final snapshot. A pause, asked for or
    // forced (ENOSPC: the backend is full), keeps it inside, waiting.
    ProgressSnapshot run();
    // Before run(), on the thread that runs it: the backend block a probe found.
    void set_backend_block(uint64_t bytes) { m_backend_block = bytes; }

    // From any thread; each takes effect within one completion or timer tick. None
    // leaves a chunk half done: chunks in flight finish, and the checkpoint is saved.
    void pause();
    void resume();
    void stop(JobState as = JobState::cancelled, std::string reason = {});
    void set_rate(uint64_t rate_bytes_per_s, uint64_t burst_bytes = 0);
    // At most this many chunks in flight from now on (1 .. the queue depth it has).
    void set_queue_depth(unsigned depth);
    ProgressSnapshot snapshot() const;

private:
    struct Slot;
    struct Buffers;
    struct Command;

    void command(Command command);
    bool start(Clock::time_point now);
    void take_commands(Clock::time_point now);
    void issue(Clock::time_point now);
    void submit(Slot& slot, IoOp op, Clock::time_point now);
    void complete(Slot& slot, int64_t result, Clock::time_point now);
    void read_done(Slot& slot, Clock::time_point now);
    void start_write(Slot& slot, const Extent& run, Clock::time_point now);
    void io_error(Slot& slot, int err, Clock::time_point now);
    void finish_chunk(Slot& slot, Clock::time_point now);
    void release_buffer(Slot& slot);
    void requeue(Slot& slot);
    void abandon_retries();
    bool work_left() const;
    size_t writes_in_flight() const;
    void finish_write_check(Clock::time_point now);
    void abort_io(const std::string& reason);
    bool giving_up() const;
    void maybe_flush(Clock::time_point now);
    void flushed(int64_t result);
    void save(bool complete);
    void check_foreign_writes();
    void end(JobState state, std::string reason);
    void pause_for(std::string reason);
    std::optional<Clock::time_point> deadline(Clock::time_point now) const;
    void publish(Clock::time_point now);
    void emit(EventLevel level, const std::string& message) const;
    size_t in_flight() const;
    bool drained() const { return in_flight() == 0 && !m_flush_in_flight; }

    const JobOptions m_options;
    uint64_t m_backend_block; // the options' unless a probe found it
    const JobTarget m_target;
    std::unique_ptr<IoEngine> m_engine;
    const DeviceProbe& m_probe;
    EventSink m_events;
    UniqueFd m_wake;

    // Commands from other threads.
    mutable std::mutex m_command_mutex;
    std::vector<Command> m_commands;

    // The job thread's own state.
    std::unique_ptr<Buffers> m_buffers;
    std::vector<Slot> m_slots;
    size_t m_depth_cap = SIZE_MAX; // set_queue_depth: the slots used at most
    std::vector<int> m_free_buffers;
    RangeSet m_done;                // flushed: in the checkpoint
    std::vector<Extent> m_pending;  // completed, not yet flushed
    std::vector<Extent> m_flushing; // completed before the fsync in flight
    std::optional<ChunkPlan> m_plan;
    bool m_plan_left = true;      // the plan may hold more chunks
    std::deque<Extent> m_redo;    // to visit again (after ENOSPC, a pause)
    std::optional<Extent> m_next; // taken from the plan, waiting for the throttle
    TokenBucket m_bucket;
    std::optional<Clock::time_point> m_throttled_until;
    bool m_flush_in_flight = false;
    Clock::time_point m_last_flush;
    Clock::time_point m_next_tick;
    Clock::time_point m_next_check; // for foreign writes
    bool m_checking = false;        // new writes held until ours in flight are done
    bool m_paused = false;
    bool m_pause_saved = false;
    std::string m_pause_reason;
    std::optional<JobState> m_ending;
    std::string m_end_reason;
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
    JobState m_state = JobState::queued;

    mutable std::mutex m_snapshot_mutex;
    ProgressSnapshot m_snapshot;
};

} // namespace prewarmd
