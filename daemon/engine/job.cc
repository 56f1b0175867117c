#include "engine/job.hh"

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/units.hh"
#include "base/zero.hh"

namespace prewarmd {
namespace {

constexpr uint64_t flush_tag = ~uint64_t{0} - 1;
// Snapshots are published this often.
constexpr auto tick_interval = std::chrono::milliseconds(250);
// Foreign writes are looked for this often (design.md: at least once a second).
constexpr auto write_check_interval = std::chrono::seconds(1);
// Zero mode holds a read buffer only while a chunk is read and checked; its writes
// all come from one zero buffer. So few read buffers serve a deep queue.
constexpr unsigned zero_mode_read_buffers = 4;

std::string errno_name(int err) {
    return std::strerror(err);
}

} // namespace

struct PrefillJob::Slot {
    // waiting: for a retry; parked: read and checked, its write held for a write check.
    enum class Stage { idle, reading, writing, waiting, parked };
    Stage stage = Stage::idle;
    IoOp op = IoOp::read; // of the current stage
    Extent chunk;
    Extent io;                // the current I/O: the chunk, or one run of zero blocks
    uint64_t transferred = 0; // of the current I/O, after short transfers
    std::vector<Extent> runs; // zero mode: the runs of zero blocks to write
    size_t run = 0;
    int buffer = -1; // read buffer held
    unsigned attempts = 0;
    Clock::time_point started;  // of the write, for its latency
    Clock::time_point retry_at; // when waiting
};

// One anonymous mapping: the read buffers, then (zero mode) the zero buffer, which
// nothing ever writes into. Aligned to and backed by huge pages where the kernel
// has them: physically contiguous memory lets the block layer build requests of up
// to max_sectors_kb from few segments, where scattered 4 KiB pages stop at
// max_segments pages (512 KiB on loop devices).
struct PrefillJob::Buffers {
    static constexpr size_t huge_page = 2 * 1024 * 1024;

    bool map(size_t size) {
        bytes = size;
        void* raw = ::mmap(nullptr, size + huge_page, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw == MAP_FAILED)
            return false;
        const auto start = reinterpret_cast<uintptr_t>(raw);
        const auto aligned = (start + huge_page - 1) / huge_page * huge_page;
        if (aligned > start)
            ::munmap(raw, aligned - start);
        if (const size_t tail = huge_page - (aligned - start); tail > 0)
            ::munmap(reinterpret_cast<char*>(aligned) + size, tail);
        base = reinterpret_cast<void*>(aligned);
        // A hint (without THP, plain pages). Touched here, as pages the kernel pins
        // for I/O or registration are faulted in small.
        ::madvise(base, size, MADV_HUGEPAGE);
        std::memset(base, 0, size);
        return true;
    }
    ~Buffers() {
        if (base != MAP_FAILED)
            ::munmap(base, bytes);
    }

    void* base = MAP_FAILED;
    size_t bytes = 0;
    uint64_t each = 0;
    int zero = -1;
    char* at(int index) const {
        return static_cast<char*>(base) + static_cast<uint64_t>(index) * each;
    }
};

struct PrefillJob::Command {
    enum class Kind { pause, resume, stop, rate, depth } kind;
    JobState as = JobState::cancelled;
    std::string reason;
    uint64_t rate = 0;
    uint64_t burst = 0;
};

PrefillJob::PrefillJob(const JobOptions& options, JobTarget target,
                       std::unique_ptr<IoEngine> engine, const DeviceProbe& probe, EventSink events)
    : m_options(options), m_backend_block(options.backend_block_bytes), m_target(std::move(target)),
      m_engine(std::move(engine)), m_probe(probe), m_events(std::move(events)),
      m_wake(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)),
      m_bucket(options.rate_bytes_per_s,
               options.burst_bytes ? options.burst_bytes : options.chunk_bytes, Clock::now()),
      m_window(Clock::now()) {
    m_snapshot.mode = std::string(to_string(options.mode));
    m_snapshot.io_engine = m_engine->name();
}

PrefillJob::~PrefillJob() = default;

void PrefillJob::emit(EventLevel level, const std::string& message) const {
    if (m_events)
        m_events(level, message);
}

size_t PrefillJob::in_flight() const {
    return static_cast<size_t>(std::count_if(m_slots.begin(), m_slots.end(), [](const Slot& s) {
        return s.stage == Slot::Stage::reading || s.stage == Slot::Stage::writing;
    }));
}

ProgressSnapshot PrefillJob::run() {
    auto now = Clock::now();
    m_started = now;
    m_window = RateWindow(now);
    m_last_flush = now;
    m_next_tick = now + tick_interval;
    m_next_check = now + write_check_interval;
    if (start(now)) {
        std::vector<IoCompletion> completions;
        for (;;) {
            now = Clock::now();
            take_commands(now);
            if (m_paused || m_ending)
                abandon_retries();
            else
                issue(now);
            maybe_flush(now);
            if (auto committed = m_engine->commit(); !committed)
                abort_io(committed.error().message);
            if (drained()) {
                if (!m_ending && !m_paused && !work_left()) {
                    check_foreign_writes(); // the last word on the writes of this run
                    end(JobState::done, "");
                }
                if (m_ending)
                    break;
                if (m_paused && !m_pause_saved) {
                    save(false);
                    m_pause_saved = true;
                    m_state = JobState::paused;
                    publish(now);
                }
            }
            completions.clear();
            if (auto reaped = m_engine->reap(completions, deadline(now)); !reaped)
                abort_io(reaped.error().message);
            now = Clock::now();
            for (const auto& c : completions) {
                if (c.tag == flush_tag)
                    flushed(c.result);
                else if (c.tag < m_slots.size())
                    complete(m_slots[c.tag], c.result, now);
            }
            if (now >= m_next_check && !m_checking && !m_ending) {
                m_checking = true;
                m_next_check = now + write_check_interval;
            }
            if (m_checking && writes_in_flight() == 0)
                finish_write_check(now);
            if (now >= m_next_tick) {
                publish(now);
                m_next_tick = now + tick_interval;
            }
        }
        save(*m_ending == JobState::done);
    }
    m_state = m_ending.value_or(JobState::failed);
    publish(Clock::now());
    return snapshot();
}

bool PrefillJob::start(Clock::time_point now) {
    m_state = JobState::running;
    if (!m_wake) {
        end(JobState::failed, "eventfd: " + errno_name(errno));
        return false;
    }
    if (m_options.idle_priority)
        if (auto idle = m_engine->set_idle_priority(); !idle)
            emit(EventLevel::warning, "cannot set the I/O priority class to idle (" +
                                          idle.error().message + "), ignoring");

    if (!m_options.checkpoint_path.empty()) {
        const auto& path = m_options.checkpoint_path;
        auto loaded = load_checkpoint(path);
        if (!loaded) {
            emit(EventLevel::warning, loaded.error().message + ": starting over");
        } else if (*loaded) {
            const auto& c = **loaded;
            if (auto fits = checkpoint_fits(c, m_target.identity, m_target.geometry.size_bytes,
                                            to_string(m_options.mode));
                !fits) {
                end(JobState::failed, path + ": " + fits.error().message);
                return false;
            }
            m_done = c.done;
            m_previous = c;
        }
    }
    m_plan.emplace(m_target.regions, m_options.chunk_bytes, m_done);
    m_total_bytes = m_target.regions.total_bytes() + m_target.allocated_bytes;
    m_resumed_bytes = m_plan->done_bytes();
    if (m_resumed_bytes > 0)
        emit(EventLevel::info, "resuming from " + m_options.checkpoint_path + ": " +
                                   format_size(m_resumed_bytes) + " of " +
                                   format_size(m_total_bytes) + " done already");

    const unsigned depth = std::max(1u, m_options.queue_depth);
    const bool zero = m_options.mode == Mode::zero;
    const unsigned readers = zero ? std::min(depth, zero_mode_read_buffers) : depth;
    m_buffers = std::make_unique<Buffers>();
    m_buffers->each = m_options.chunk_bytes;
    const size_t buffer_bytes = (readers + (zero ? 1 : 0)) * m_options.chunk_bytes;
    if (!m_buffers->map(buffer_bytes)) {
        end(JobState::failed,
            "cannot map " + format_size(buffer_bytes) + " of buffers: " + errno_name(errno));
        return false;
    }
    std::vector<iovec> iovecs;
    for (unsigned i = 0; i < readers + (zero ? 1 : 0); ++i)
        iovecs.push_back({m_buffers->at(static_cast<int>(i)), m_options.chunk_bytes});
    if (zero)
        m_buffers->zero = static_cast<int>(readers);
    for (unsigned i = 0; i < readers; ++i)
        m_free_buffers.push_back(static_cast<int>(readers - 1 - i));
    if (const auto note = m_engine->register_buffers(iovecs); !note.empty())
        emit(EventLevel::info, note);
    m_slots.resize(depth);
    if (auto watched = m_engine->watch(m_wake.get()); !watched) {
        end(JobState::failed, watched.error().message);
        return false;
    }
    if (m_options.mode != Mode::read)
        m_base_sectors = m_probe.written_sectors();
    emit(EventLevel::info,
         std::string(to_string(m_options.mode)) + " mode, " + format_size(m_options.chunk_bytes) +
             " chunks, queue depth " + std::to_string(depth) + ", " + m_engine->name() +
             (m_bucket.rate_bytes_per_s()
                  ? ", at most " + format_rate(static_cast<double>(m_bucket.rate_bytes_per_s()))
                  : std::string()));
    publish(now);
    return true;
}

void PrefillJob::take_commands(Clock::time_point now) {
    std::vector<Command> commands;
    {
        std::lock_guard lock(m_command_mutex);
        commands.swap(m_commands);
    }
    for (auto& command : commands) {
        switch (command.kind) {
        case Command::Kind::pause:
            if (!m_paused && !m_ending) {
                m_paused = true;
                m_pause_saved = false;
                m_pause_reason = "paused on request";
            }
            break;
        case Command::Kind::resume:
            if (m_paused && !m_ending) {
                // Someone may have written while we held still: look before reading on.
                check_foreign_writes();
                if (m_ending)
                    break;
                m_paused = false;
                m_pause_reason.clear();
                m_state = JobState::running;
                emit(EventLevel::info, "resuming");
            }
            break;
        case Command::Kind::stop:
            end(command.as, command.reason.empty() ? "stopped on request" : command.reason);
            break;
        case Command::Kind::rate:
            m_bucket.set_rate(command.rate, command.burst ? command.burst : m_options.chunk_bytes,
                              now);
            m_throttled_until.reset();
            break;
        case Command::Kind::depth:
            m_depth_cap = std::max<uint64_t>(1, command.rate);
            break;
        }
    }
    if (!commands.empty())
        publish(now);
}

void PrefillJob::issue(Clock::time_point now) {
    for (auto& slot : m_slots)
        if (slot.stage == Slot::Stage::waiting && slot.retry_at <= now)
            submit(slot, slot.op, now);

    for (auto& slot : m_slots) {
        if (slot.stage != Slot::Stage::idle)
            continue;
        if (m_free_buffers.empty() || in_flight() >= m_depth_cap)
            break;
        if (!m_next) {
            if (!m_redo.empty()) {
                m_next = m_redo.front();
                m_redo.pop_front();
            } else if (m_plan_left) {
                m_next = m_plan->next();
                m_plan_left = m_next.has_value();
            }
        }
        if (!m_next)
            break;
        const auto ready = m_bucket.ready_at(now, m_next->length);
        if (ready > now) {
            m_throttled_until = ready;
            break;
        }
        m_throttled_until.reset();
        m_bucket.take(now, m_next->length);
        slot.chunk = *m_next;
        m_next.reset();
        slot.buffer = m_free_buffers.back();
        m_free_buffers.pop_back();
        slot.attempts = 0;
        slot.io = slot.chunk;
        slot.transferred = 0;
        submit(slot, IoOp::read, now);
    }
}

void PrefillJob::submit(Slot& slot, IoOp op, Clock::time_point now) {
    const bool write = op == IoOp::write;
    if (write && slot.transferred == 0)
        slot.started = now;
    slot.op = op;
    slot.stage = write ? Slot::Stage::writing : Slot::Stage::reading;
    const bool zeros = write && m_buffers->zero >= 0;
    const int buffer = zeros ? m_buffers->zero : slot.buffer;
    const uint64_t in_buffer = zeros ? 0 : slot.io.offset - slot.chunk.offset;
    const auto length = static_cast<uint32_t>(slot.io.length - slot.transferred);
    IoRequest request;
    request.op = op;
    request.offset = slot.io.offset + slot.transferred;
    request.length = length;
    request.buffer = m_buffers->at(buffer) + in_buffer + slot.transferred;
    request.buffer_index = buffer;
    request.tag = static_cast<uint64_t>(&slot - m_slots.data());
    if (write)
        m_submitted_write_bytes += length;
    if (auto queued = m_engine->queue(request); !queued)
        io_error(slot, -queued.error().err, now);
}

void PrefillJob::complete(Slot& slot, int64_t result, Clock::time_point now) {
    if (result <= 0) {
        // Zero bytes where bytes were asked for: the device is shorter than it was.
        io_error(slot, result < 0 ? static_cast<int>(-result) : EIO, now);
        return;
    }
    slot.transferred += static_cast<uint64_t>(result);
    if (slot.transferred < slot.io.length) {
        // A short transfer: finish the rest, unless the job is giving up.
        if (giving_up())
            requeue(slot);
        else
            submit(slot, slot.op, now);
        return;
    }
    if (slot.op == IoOp::read) {
        read_done(slot, now);
        return;
    }
    m_written_bytes += slot.io.length;
    m_latency.record(now - slot.started);
    if (++slot.run < slot.runs.size()) {
        start_write(slot, slot.runs[slot.run], now);
        return;
    }
    finish_chunk(slot, now);
}

void PrefillJob::read_done(Slot& slot, Clock::time_point now) {
    const uint64_t length = slot.chunk.length;
    m_read_bytes += length;
    if (m_options.mode == Mode::read) {
        finish_chunk(slot, now);
        return;
    }
    // No new writes once the job is pausing or ending: the chunk is visited again.
    if (m_paused || m_ending) {
        requeue(slot);
        return;
    }
    slot.runs.clear();
    slot.run = 0;
    if (m_options.mode == Mode::rewrite) {
        slot.runs.push_back(slot.chunk);
    } else {
        const char* data = m_buffers->at(slot.buffer);
        const uint64_t block = std::min(m_backend_block, length);
        for (uint64_t at = 0; at < length; at += block) {
            const uint64_t piece = std::min(block, length - at);
            if (!is_all_zero(data + at, piece)) {
                m_skipped_bytes += piece;
                continue;
            }
            if (!slot.runs.empty() && slot.runs.back().end() == slot.chunk.offset + at)
                slot.runs.back().length += piece;
            else
                slot.runs.push_back({slot.chunk.offset + at, piece});
        }
        release_buffer(slot); // zeros are written from the zero buffer
        if (slot.runs.empty()) {
            finish_chunk(slot, now);
            return;
        }
    }
    start_write(slot, slot.runs[0], now);
}

// During a write check new writes wait, parked, until ours in flight are counted.
void PrefillJob::start_write(Slot& slot, const Extent& run, Clock::time_point now) {
    slot.io = run;
    slot.transferred = 0;
    if (m_checking)
        slot.stage = Slot::Stage::parked;
    else
        submit(slot, IoOp::write, now);
}

void PrefillJob::finish_chunk(Slot& slot, Clock::time_point now) {
    release_buffer(slot);
    m_pending.push_back(slot.chunk);
    m_visited_bytes += slot.chunk.length;
    m_window.add(now, slot.chunk.length);
    slot.stage = Slot::Stage::idle;
}

void PrefillJob::release_buffer(Slot& slot) {
    if (slot.buffer >= 0) {
        m_free_buffers.push_back(slot.buffer);
        slot.buffer = -1;
    }
}

void PrefillJob::requeue(Slot& slot) {
    release_buffer(slot);
    m_redo.push_front(slot.chunk);
    slot.stage = Slot::Stage::idle;
}

// The engine itself failed: nothing more can be known of the requests in flight.
void PrefillJob::abort_io(const std::string& reason) {
    for (auto& slot : m_slots)
        if (slot.stage != Slot::Stage::idle)
            requeue(slot);
    m_flush_in_flight = false;
    m_flushing.clear();
    end(JobState::failed, reason);
}

bool PrefillJob::giving_up() const {
    return m_ending && (*m_ending == JobState::failed || *m_ending == JobState::detached ||
                        *m_ending == JobState::interrupted);
}

// A pausing or ending job starts no new I/O: chunks waiting for a retry or for a
// write check are visited again later.
void PrefillJob::abandon_retries() {
    for (auto& slot : m_slots)
        if (slot.stage == Slot::Stage::waiting || slot.stage == Slot::Stage::parked)
            requeue(slot);
}

bool PrefillJob::work_left() const {
    return m_next || !m_redo.empty() || m_plan_left ||
           std::any_of(m_slots.begin(), m_slots.end(), [](const Slot& s) {
               return s.stage == Slot::Stage::waiting || s.stage == Slot::Stage::parked;
           });
}

size_t PrefillJob::writes_in_flight() const {
    return static_cast<size_t>(std::count_if(m_slots.begin(), m_slots.end(), [](const Slot& s) {
        return s.stage == Slot::Stage::writing;
    }));
}

// With none of our writes in flight, the kernel's count of sectors written and
// ours must agree exactly; then the held writes go.
void PrefillJob::finish_write_check(Clock::time_point now) {
    m_checking = false;
    check_foreign_writes();
    for (auto& slot : m_slots)
        if (slot.stage == Slot::Stage::parked) {
            if (m_ending || m_paused)
                requeue(slot);
            else
                submit(slot, IoOp::write, now);
        }
}

void PrefillJob::io_error(Slot& slot, int err, Clock::time_point now) {
    const auto what = std::string(slot.op == IoOp::read ? "read" : "write") + " at offset " +
                      std::to_string(slot.io.offset + slot.transferred);
    if (m_ending) {
        requeue(slot);
        return;
    }
    if (err == ENOSPC && slot.op == IoOp::write) {
        requeue(slot);
        pause_for("the backend is full (ENOSPC on " + what +
                  "): paused until space is freed and the job resumed");
        return;
    }
    if (err == ENODEV || err == ENXIO || (err == EIO && !m_probe.present())) {
        requeue(slot);
        end(JobState::detached, "the device went away (" + what + ": " + errno_name(err) + ")");
        return;
    }
    const bool transient = err == EIO || err == EAGAIN || err == EINTR || err == ECANCELED;
    if (transient && slot.attempts < m_options.max_retries) {
        ++slot.attempts;
        const auto backoff = m_options.retry_backoff * (1u << (2 * (slot.attempts - 1)));
        slot.stage = Slot::Stage::waiting;
        slot.retry_at = now + backoff;
        emit(EventLevel::warning, what + ": " + errno_name(err) + ", retry " +
                                      std::to_string(slot.attempts) + " of " +
                                      std::to_string(m_options.max_retries) + " in " +
                                      std::to_string(backoff.count()) + " ms");
        return;
    }
    requeue(slot);
    end(JobState::failed,
        what + " failed: " + errno_name(err) +
            (slot.attempts ? " (after " + std::to_string(slot.attempts) + " retries)" : ""));
}

void PrefillJob::pause_for(std::string reason) {
    if (m_paused)
        return;
    m_paused = true;
    m_pause_saved = false;
    m_pause_reason = std::move(reason);
    emit(EventLevel::warning, m_pause_reason);
}

void PrefillJob::end(JobState state, std::string reason) {
    if (m_ending)
        return;
    m_ending = state;
    m_end_reason = std::move(reason);
    if (state == JobState::failed || state == JobState::detached || state == JobState::interrupted)
        emit(EventLevel::warning, std::string(to_string(state)) + ": " + m_end_reason);
}

// Chunks count as done only once a flush covers them, so a checkpoint never runs
// ahead of the disk: every few seconds, and whenever the job settles.
void PrefillJob::maybe_flush(Clock::time_point now) {
    if (m_flush_in_flight || m_pending.empty() || m_ending == JobState::detached)
        return;
    const bool settling = in_flight() == 0 && (m_ending || m_paused || !work_left());
    if (!settling && now - m_last_flush < m_options.checkpoint_interval)
        return;
    m_flushing.swap(m_pending);
    m_pending.clear();
    IoRequest request;
    request.op = IoOp::fsync;
    request.tag = flush_tag;
    m_flush_in_flight = true;
    m_last_flush = now;
    if (auto queued = m_engine->queue(request); !queued)
        flushed(queued.error().err);
}

void PrefillJob::flushed(int64_t result) {
    m_flush_in_flight = false;
    if (result < 0) {
        emit(EventLevel::warning, "flushing the device failed (" +
                                      errno_name(static_cast<int>(-result)) +
                                      "): the chunks since the last flush stay unrecorded");
        m_flushing.clear();
        return;
    }
    for (const auto& e : m_flushing)
        m_done.add(e);
    m_flushing.clear();
    if (!m_ending && !m_paused)
        save(false);
}

void PrefillJob::save(bool complete) {
    if (m_options.checkpoint_path.empty())
        return;
    Checkpoint c;
    c.identity = m_target.identity;
    c.size_bytes = m_target.geometry.size_bytes;
    c.mode = std::string(to_string(m_options.mode));
    c.done = m_done;
    c.written_bytes = m_previous.written_bytes + m_written_bytes;
    c.read_bytes = m_previous.read_bytes + m_read_bytes;
    c.skipped_bytes = m_previous.skipped_bytes + m_skipped_bytes;
    c.complete = complete;
    if (auto saved = save_checkpoint(m_options.checkpoint_path, c); !saved)
        emit(EventLevel::warning, "cannot save the checkpoint: " + saved.error().message +
                                      "; a restart would redo the work since the last one");
}

void PrefillJob::check_foreign_writes() {
    if (m_options.mode == Mode::read || !m_base_sectors || m_ending)
        return;
    const auto sectors = m_probe.written_sectors();
    if (!sectors || *sectors < *m_base_sectors)
        return;
    // Called with none of our writes in flight, so the kernel has counted all of ours.
    const uint64_t delta = *sectors - *m_base_sectors;
    const uint64_t ours = (m_submitted_write_bytes + 511) / 512;
    if (delta > ours)
        end(JobState::interrupted,
            "another writer wrote " + format_size((delta - ours) * 512) +
                " to the disk; stopped at once, since read-check-write is only safe alone");
}

std::optional<Clock::time_point> PrefillJob::deadline(Clock::time_point now) const {
    if (m_paused && !m_ending && drained())
        return std::nullopt; // nothing to do until a command comes
    auto deadline = std::max(std::min(m_next_tick, m_next_check), now);
    if (m_throttled_until && !m_paused && !m_ending)
        deadline = std::min(deadline, *m_throttled_until);
    for (const auto& slot : m_slots)
        if (slot.stage == Slot::Stage::waiting)
            deadline = std::min(deadline, slot.retry_at);
    return deadline;
}

void PrefillJob::publish(Clock::time_point now) {
    ProgressSnapshot s;
    s.state = m_state;
    if (m_state == JobState::paused || m_paused)
        s.reason = m_pause_reason;
    else if (is_final(m_state))
        s.reason = m_end_reason;
    s.mode = std::string(to_string(m_options.mode));
    s.io_engine = m_engine->name();
    s.total_bytes = m_total_bytes;
    s.resumed_bytes = m_resumed_bytes;
    s.done_bytes =
        std::min(m_total_bytes, m_resumed_bytes + m_target.allocated_bytes + m_visited_bytes);
    s.written_bytes = m_written_bytes;
    s.read_bytes = m_read_bytes;
    s.skipped_bytes = m_skipped_bytes + m_target.allocated_bytes;
    s.rate_limit_bytes_per_s = m_bucket.rate_bytes_per_s();
    s.rate_1s_bytes_per_s = m_window.rate(now, std::chrono::seconds(1));
    s.rate_10s_bytes_per_s = m_window.rate(now, std::chrono::seconds(10));
    s.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(now - m_started);
    const double seconds = std::chrono::duration<double>(now - m_started).count();
    s.rate_avg_bytes_per_s = seconds > 0 ? static_cast<double>(m_visited_bytes) / seconds : 0;
    if (s.state == JobState::done) {
        s.eta = std::chrono::seconds(0);
    } else if (s.state == JobState::running && s.rate_10s_bytes_per_s > 0) {
        s.eta = std::chrono::seconds(static_cast<int64_t>(
            static_cast<double>(s.total_bytes - s.done_bytes) / s.rate_10s_bytes_per_s + 0.5));
    }
    s.write_latency = m_latency.summary();
    std::lock_guard lock(m_snapshot_mutex);
    m_snapshot = std::move(s);
}

ProgressSnapshot PrefillJob::snapshot() const {
    std::lock_guard lock(m_snapshot_mutex);
    return m_snapshot;
}

void PrefillJob::command(Command command) {
    {
        std::lock_guard lock(m_command_mutex);
        m_commands.push_back(std::move(command));
    }
    const uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(m_wake.get(), &one, sizeof one);
}

void PrefillJob::pause() {
    command({Command::Kind::pause});
}

void PrefillJob::resume() {
    command({Command::Kind::resume});
}

void PrefillJob::stop(JobState as, std::string reason) {
    command({Command::Kind::stop, as, std::move(reason)});
}

void PrefillJob::set_rate(uint64_t rate_bytes_per_s, uint64_t burst_bytes) {
    command({Command::Kind::rate, {}, {}, rate_bytes_per_s, burst_bytes});
}

void PrefillJob::set_queue_depth(unsigned depth) {
    command({Command::Kind::depth, {}, {}, depth, 0});
}

} // namespace prewarmd
