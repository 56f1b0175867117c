#include "engine/job.hh"

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <type_traits>

#include "base/units.hh"
#include "base/zero.hh"

namespace prewarmd {
namespace {

std::string unreadable_count(const std::string& why) {
    return "the disk's write count cannot be read (" + why + "): another writer would go unseen";
}

constexpr uint64_t flush_tag = ~uint64_t{0} - 1;
// Snapshots are published this often.
constexpr auto tick_interval = std::chrono::milliseconds(250);
// Foreign writes are looked for this often (docs/engine.md: at least once a second).
constexpr auto write_check_interval = std::chrono::seconds(1);
constexpr auto quiet_poll = std::chrono::milliseconds(10); // while a probe holds new I/O
// Zero mode holds a read buffer only while a chunk is read and checked; its writes
// all come from one zero buffer. So few read buffers serve a deep queue.
constexpr unsigned zero_mode_read_buffers = 3;

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

namespace {

using Phase = PrefillJob::Phase;

// The phase changes that may happen (docs/engine.md); any other is a bug.
bool allowed(Phase from, Phase to) {
    switch (from) {
    case Phase::starting:
        return to == Phase::running || to == Phase::ending;
    case Phase::running:
        return to == Phase::checking || to == Phase::pausing || to == Phase::ending;
    case Phase::checking:
        return to == Phase::running || to == Phase::pausing || to == Phase::ending;
    case Phase::pausing:
        return to == Phase::paused || to == Phase::running || to == Phase::ending;
    case Phase::paused:
        return to == Phase::running || to == Phase::ending;
    case Phase::ending:
        return to == Phase::ended;
    case Phase::ended:
        return false;
    }
    return false;
}

} // namespace

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

void PrefillJob::set_phase(Phase phase) {
    if (phase == m_phase)
        return;
    if (!allowed(m_phase, phase)) {
        // A bug: the tests look for this line.
        emit(EventLevel::warning, "BUG: illegal phase change " + std::string(to_string(m_phase)) +
                                      " -> " + std::string(to_string(phase)) + ", ignoring");
        return;
    }
    m_phase = phase;
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
        set_phase(Phase::running);
        std::vector<IoCompletion> completions;
        m_source_tick = now;
        while (m_phase != Phase::ended) {
            now = Clock::now();
            take_commands(now);
            if (m_source_tick && now >= *m_source_tick && m_phase != Phase::ending) {
                auto next = m_source->tick(now);
                if (const auto lost = m_source->lost(); !next && !lost.empty())
                    end(JobStatus::stepped_aside, lost); // not a failure: the space went
                else if (!next)
                    end(JobStatus::failed, next.error().message);
                else
                    m_source_tick = *next;
            }
            if (m_phase == Phase::running || m_phase == Phase::checking)
                issue(now);
            else
                abandon_held();
            maybe_flush(now);
            if (auto committed = m_engine->commit(); !committed)
                abort_io(committed.error().message);
            if (drained()) {
                if (m_phase == Phase::running && !work_left()) {
                    check_foreign_writes(); // the last word on the writes of this run
                    end(JobStatus::visited, "");
                }
                if (m_phase == Phase::ending) {
                    save(m_end == JobStatus::visited);
                    set_phase(Phase::ended);
                    break;
                }
                if (m_phase == Phase::pausing) {
                    save(false);
                    set_phase(Phase::paused);
                    publish(now);
                }
            }
            if (const bool busy = !drained(); busy != m_busy) {
                m_busy = busy;
                m_quiet.set_busy(this, busy);
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
            if (m_phase == Phase::running && now >= m_next_check) {
                set_phase(Phase::checking);
                m_next_check = now + write_check_interval;
            }
            if (m_phase == Phase::checking && writes_in_flight() == 0)
                finish_write_check(now);
            if (now >= m_next_tick) {
                publish(now);
                m_next_tick = now + tick_interval;
            }
        }
    }
    if (m_busy) {
        m_busy = false;
        m_quiet.set_busy(this, false);
    }
    if (m_phase == Phase::ending) // it could not start
        set_phase(Phase::ended);
    publish(Clock::now());
    return snapshot();
}

bool PrefillJob::start(Clock::time_point now) {
    if (!m_wake) {
        end(JobStatus::failed, "eventfd: " + errno_name(errno));
        return false;
    }
    if (m_options.idle_priority)
        if (auto idle = m_engine->set_idle_priority(); !idle)
            emit(EventLevel::warning, "cannot set the I/O priority class to idle (" +
                                          idle.error().message + "), ignoring");
    // Someone at the disk already (they came before the watch of opens began).
    if (m_target.who_else)
        if (const auto who = m_target.who_else(); !who.empty()) {
            end(JobStatus::stepped_aside, "the disk is open by " + who);
            return false;
        }

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
                end(JobStatus::failed, path + ": " + fits.error().message);
                return false;
            }
            m_done = c.done;
            m_previous = c;
        }
    }
    if (m_target.source) {
        auto source = m_target.source(m_done, m_options.chunk_bytes);
        if (!source) {
            end(JobStatus::failed, source.error().message);
            return false;
        }
        m_source = std::move(*source);
    } else {
        m_source = std::make_unique<ChunkQueue>(
            ChunkPlan(m_target.regions, m_options.chunk_bytes, m_done, m_target.last));
    }
    m_total_bytes = m_source->total_bytes() + m_target.allocated_bytes;
    m_resumed_bytes = m_source->resumed_bytes();
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
        end(JobStatus::failed,
            "cannot map " + format_size(buffer_bytes) + " of buffers: " + errno_name(errno));
        return false;
    }
    std::vector<iovec> iovecs;
    for (unsigned i = 0; i < readers + (zero ? 1 : 0); ++i)
        iovecs.push_back({m_buffers->at(static_cast<int>(i)), m_options.chunk_bytes});
    if (zero) {
        m_buffers->zero = static_cast<int>(readers);
        if (m_fill)
            std::memset(m_buffers->at(m_buffers->zero), m_fill, m_options.chunk_bytes);
    }
    for (unsigned i = 0; i < readers; ++i)
        m_free_buffers.push_back(static_cast<int>(readers - 1 - i));
    if (const auto note = m_engine->register_buffers(iovecs); !note.empty())
        emit(EventLevel::info, note);
    m_slots.resize(depth);
    std::vector<int> wakers{m_wake.get()};
    if (m_target.opens)
        wakers.push_back(m_target.opens->fd());
    if (auto watched = m_engine->watch(wakers); !watched) {
        end(JobStatus::failed, watched.error().message);
        return false;
    }
    if (m_options.mode != Mode::read && m_target.foreign_writes_counted) {
        auto base = m_probe.written_sectors();
        if (!base) {
            end(JobStatus::stepped_aside, unreadable_count(base.error().message));
            return false;
        }
        m_base_sectors = *base;
    }
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
    uint64_t woken;
    while (::read(m_wake.get(), &woken, sizeof woken) > 0) {
    }
    std::vector<JobCommand> commands;
    {
        std::lock_guard lock(m_command_mutex);
        commands.swap(m_commands);
    }
    for (const auto& command : commands)
        obey(command, now);
    if (!commands.empty())
        publish(now);
}

void PrefillJob::obey(const JobCommand& command, Clock::time_point now) {
    std::visit(
        [&](const auto& c) {
            using C = std::decay_t<decltype(c)>;
            if constexpr (std::is_same_v<C, PauseCommand>) {
                if (m_phase == Phase::running || m_phase == Phase::checking) {
                    m_pause_reason = "paused on request";
                    set_phase(Phase::pausing);
                }
            } else if constexpr (std::is_same_v<C, ResumeCommand>) {
                if (m_phase == Phase::pausing || m_phase == Phase::paused) {
                    // Someone may have written while we held still: look before reading on.
                    check_foreign_writes();
                    if (m_phase == Phase::ending)
                        return;
                    m_pause_reason.clear();
                    set_phase(Phase::running);
                    emit(EventLevel::info, "resuming");
                }
            } else if constexpr (std::is_same_v<C, StopCommand>) {
                end(c.as, c.reason.empty() ? "stopped on request" : c.reason);
            } else if constexpr (std::is_same_v<C, RateCommand>) {
                m_bucket.set_rate(c.rate_bytes_per_s,
                                  c.burst_bytes ? c.burst_bytes : m_options.chunk_bytes, now);
                m_throttled_until.reset();
            } else if constexpr (std::is_same_v<C, DepthCommand>) {
                m_depth_cap = std::max(1u, c.chunks_in_flight);
            }
        },
        command);
}

void PrefillJob::issue(Clock::time_point now) {
    if (m_quiet.held()) { // another job's probe times the disks
        m_throttled_until = now + quiet_poll;
        return;
    }
    for (auto& slot : m_slots)
        if (slot.stage == Slot::Stage::waiting && slot.retry_at <= now) {
            if (slot.op == IoOp::write)
                write_if_alone(slot, now);
            else
                submit(slot, slot.op, now);
        }

    for (auto& slot : m_slots) {
        if (slot.stage != Slot::Stage::idle)
            continue;
        if (m_free_buffers.empty() || in_flight() >= m_depth_cap)
            break;
        const Extent* next = m_source->peek();
        if (!next)
            break;
        // The rate is of the disk covered: a sparse job's piece counts its block.
        const uint64_t covered = m_source->covered(*next).length;
        const auto ready = m_bucket.ready_at(now, covered);
        if (ready > now) {
            m_throttled_until = ready;
            break;
        }
        m_throttled_until.reset();
        m_bucket.take(now, covered);
        slot.chunk = *next;
        m_source->take();
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
    const auto done = static_cast<uint64_t>(result);
    if (slot.transferred + done < slot.io.length) {
        // A short transfer: finish the rest, unless the job is giving up. What did
        // not go out is not ours in the kernel's count, and the rest of a write is
        // a write like any other: it goes out only while nobody else is at the disk.
        if (slot.op == IoOp::write)
            m_submitted_write_bytes -= slot.io.length - slot.transferred - done;
        slot.transferred += done;
        if (giving_up())
            visit_again(slot);
        else if (slot.op == IoOp::write)
            write_if_alone(slot, now);
        else
            submit(slot, slot.op, now);
        return;
    }
    slot.transferred += done;
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

// New writes go out only while the job is at work: a pausing or ending job
// visits the chunk again later.
bool PrefillJob::writing_allowed() const {
    return m_phase == Phase::running || m_phase == Phase::checking;
}

void PrefillJob::read_done(Slot& slot, Clock::time_point now) {
    const uint64_t length = slot.chunk.length;
    m_read_bytes += length;
    if (m_options.mode == Mode::read) {
        finish_chunk(slot, now);
        return;
    }
    if (!writing_allowed()) {
        visit_again(slot);
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
// Before a write goes out, a look for others at the disk.
void PrefillJob::start_write(Slot& slot, const Extent& run, Clock::time_point now) {
    slot.io = run;
    slot.transferred = 0;
    write_if_alone(slot, now);
}

// Every write that goes out, first or retried, goes past the same look.
void PrefillJob::write_if_alone(Slot& slot, Clock::time_point now) {
    if (m_phase == Phase::checking)
        slot.stage = Slot::Stage::parked;
    else if (others_arrived())
        visit_again(slot);
    else
        submit(slot, IoOp::write, now);
}

// Someone besides the job at the disk: an open of its node by another process (not
// a reader such as udev's probe), or a write the kernel counted that is not ours.
// Then the job steps aside: no new write; those in flight finish (docs/safety.md).
bool PrefillJob::others_arrived() {
    if (m_phase == Phase::ending)
        return true;
    if (const auto why = m_source->lost(); !why.empty()) {
        end(JobStatus::stepped_aside, why);
        return true;
    }
    if (m_target.opens && m_target.opens->seen()) {
        const auto who = m_target.who_else ? m_target.who_else() : "another process";
        if (!who.empty()) {
            end(JobStatus::stepped_aside, "the disk was opened by " + who);
            return true;
        }
    }
    if (const auto why = foreign_writes(); !why.empty()) {
        end(JobStatus::stepped_aside, why);
        return true;
    }
    return false;
}

// The kernel's count of the disk's writes against ours (submitted: the kernel has
// counted at most those): "" where nobody else wrote. A count that cannot be read
// or went back cannot tell, and stops the job as a write would.
std::string PrefillJob::foreign_writes() const {
    if (!m_base_sectors)
        return {};
    const auto sectors = m_probe.written_sectors();
    if (!sectors || !*sectors)
        return unreadable_count(sectors ? "gone" : sectors.error().message);
    if (**sectors < *m_base_sectors)
        return "the disk's write count went back, from " + std::to_string(*m_base_sectors) +
               " to " + std::to_string(**sectors) + " sectors: not the disk the job began on";
    const uint64_t delta = **sectors - *m_base_sectors;
    const uint64_t ours = (m_submitted_write_bytes + 511) / 512;
    if (delta > ours)
        return "another writer wrote " + format_size((delta - ours) * 512) + " to the disk";
    return {};
}

void PrefillJob::finish_chunk(Slot& slot, Clock::time_point now) {
    release_buffer(slot);
    m_source->visited(slot.chunk);
    const auto covered = m_source->covered(slot.chunk);
    m_pending.push_back(covered);
    m_visited_bytes += covered.length;
    m_window.add(now, covered.length);
    slot.stage = Slot::Stage::idle;
}

void PrefillJob::release_buffer(Slot& slot) {
    if (slot.buffer >= 0) {
        m_free_buffers.push_back(slot.buffer);
        slot.buffer = -1;
    }
}

void PrefillJob::visit_again(Slot& slot) {
    release_buffer(slot);
    m_source->again(slot.chunk);
    slot.stage = Slot::Stage::idle;
}

// The engine itself failed: nothing more can be known of the requests in flight.
void PrefillJob::abort_io(const std::string& reason) {
    for (auto& slot : m_slots)
        if (slot.stage != Slot::Stage::idle)
            visit_again(slot);
    m_flushing.reset();
    end(JobStatus::failed, reason);
}

bool PrefillJob::giving_up() const {
    return m_phase == Phase::ending && (m_end == JobStatus::failed || m_end == JobStatus::detached);
}

// A pausing or ending job starts no new I/O: chunks waiting for a retry or for a
// write check are visited again later.
void PrefillJob::abandon_held() {
    for (auto& slot : m_slots)
        if (slot.stage == Slot::Stage::waiting || slot.stage == Slot::Stage::parked)
            visit_again(slot);
}

bool PrefillJob::work_left() {
    return !m_source->exhausted() || std::any_of(m_slots.begin(), m_slots.end(), [](const Slot& s) {
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
    check_foreign_writes();
    if (m_phase != Phase::checking)
        return; // it found a foreign write: ending
    set_phase(Phase::running);
    for (auto& slot : m_slots)
        if (slot.stage == Slot::Stage::parked)
            write_if_alone(slot, now);
}

void PrefillJob::io_error(Slot& slot, int err, Clock::time_point now) {
    const auto what = std::string(slot.op == IoOp::read ? "read" : "write") + " at offset " +
                      std::to_string(slot.io.offset + slot.transferred);
    if (m_phase == Phase::ending) {
        visit_again(slot);
        return;
    }
    if (err == ENOSPC && slot.op == IoOp::write) {
        visit_again(slot);
        pause_for("the backend is full (ENOSPC on " + what +
                  "): paused until space is freed and the job resumed");
        return;
    }
    if (err == ENODEV || err == ENXIO || (err == EIO && !m_probe.present())) {
        visit_again(slot);
        end(JobStatus::detached, "the device went away (" + what + ": " + errno_name(err) + ")");
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
    visit_again(slot);
    end(JobStatus::failed,
        what + " failed: " + errno_name(err) +
            (slot.attempts ? " (after " + std::to_string(slot.attempts) + " retries)" : ""));
}

void PrefillJob::pause_for(std::string reason) {
    if (m_phase != Phase::running && m_phase != Phase::checking)
        return;
    m_pause_reason = std::move(reason);
    set_phase(Phase::pausing);
    emit(EventLevel::warning, m_pause_reason);
}

void PrefillJob::end(JobStatus as, std::string reason) {
    if (m_phase == Phase::ending || m_phase == Phase::ended)
        return;
    set_phase(Phase::ending);
    m_end = as;
    m_end_reason = std::move(reason);
    if (as == JobStatus::failed || as == JobStatus::detached)
        emit(EventLevel::warning, std::string(to_string(as)) + ": " + m_end_reason);
    else if (as == JobStatus::stepped_aside)
        emit(EventLevel::info, "stepping aside: " + m_end_reason);
}

// Chunks count as done only once a flush covers them, so a checkpoint never runs
// ahead of the disk: every few seconds, and whenever the job settles.
void PrefillJob::maybe_flush(Clock::time_point now) {
    if (m_flushing || m_pending.empty() ||
        (m_phase == Phase::ending && m_end == JobStatus::detached))
        return;
    const bool settling =
        in_flight() == 0 && (m_phase == Phase::ending || m_phase == Phase::pausing ||
                             m_phase == Phase::paused || !work_left());
    if (!settling && now - m_last_flush < m_options.checkpoint_interval)
        return;
    m_flushing.emplace().swap(m_pending);
    IoRequest request;
    request.op = IoOp::fsync;
    request.tag = flush_tag;
    m_last_flush = now;
    if (auto queued = m_engine->queue(request); !queued)
        flushed(queued.error().err);
}

void PrefillJob::flushed(int64_t result) {
    auto chunks = std::move(*m_flushing);
    m_flushing.reset();
    if (result < 0) {
        emit(EventLevel::warning, "flushing the device failed (" +
                                      errno_name(static_cast<int>(-result)) +
                                      "): the chunks since the last flush stay unrecorded");
        return;
    }
    for (const auto& e : chunks)
        m_done.add(e);
    if (m_phase == Phase::running || m_phase == Phase::checking)
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
    c.probe = m_figures;
    if (auto saved = save_checkpoint(m_options.checkpoint_path, c); !saved)
        emit(EventLevel::warning, "cannot save the checkpoint: " + saved.error().message +
                                      "; a restart would redo the work since the last one");
}

void PrefillJob::check_foreign_writes() {
    if (m_options.mode == Mode::read || m_phase == Phase::ending)
        return;
    // Called with none of our writes in flight, so the kernel has counted all of ours.
    if (const auto why = foreign_writes(); !why.empty())
        end(JobStatus::stepped_aside, why);
}

std::optional<Clock::time_point> PrefillJob::deadline(Clock::time_point now) const {
    if (m_phase == Phase::paused)
        return std::nullopt; // nothing to do until a command comes
    auto deadline = std::max(std::min(m_next_tick, m_next_check), now);
    if (m_throttled_until && m_phase != Phase::pausing && m_phase != Phase::ending)
        deadline = std::min(deadline, *m_throttled_until);
    for (const auto& slot : m_slots)
        if (slot.stage == Slot::Stage::waiting)
            deadline = std::min(deadline, slot.retry_at);
    if (m_source_tick)
        deadline = std::max(std::min(deadline, *m_source_tick), now);
    return deadline;
}

void PrefillJob::publish(Clock::time_point now) {
    ProgressSnapshot s;
    switch (m_phase) {
    case Phase::starting:
    case Phase::running:
    case Phase::checking:
    case Phase::ending:
        s.status = JobStatus::running;
        break;
    case Phase::pausing:
        s.status = JobStatus::running;
        s.reason = m_pause_reason;
        break;
    case Phase::paused:
        s.status = JobStatus::paused;
        s.reason = m_pause_reason;
        break;
    case Phase::ended:
        s.status = m_end;
        s.reason = m_end_reason;
        break;
    }
    s.mode = std::string(to_string(m_options.mode));
    s.io_engine = m_engine->name();
    // A filesystem's free space is known as it is claimed: the source's word now.
    if (m_source) {
        m_total_bytes = m_source->total_bytes() + m_target.allocated_bytes;
        s.strategy = std::string(to_string(m_source->sparse() ? Strategy::sparse : Strategy::full));
    }
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
    if (s.status == JobStatus::visited) {
        s.eta = std::chrono::seconds(0);
    } else if (s.status == JobStatus::running && s.rate_10s_bytes_per_s > 0) {
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

void PrefillJob::command(JobCommand command) {
    {
        std::lock_guard lock(m_command_mutex);
        m_commands.push_back(std::move(command));
    }
    const uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(m_wake.get(), &one, sizeof one);
}

} // namespace prewarmd
