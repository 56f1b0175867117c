#include "job/runner.hh"

#include <cerrno>
#include <filesystem>
#include <thread>

#include "base/overloaded.hh"
#include "base/range_set.hh"
#include "base/units.hh"
#include "engine/checkpoint.hh"
#include "engine/plan.hh"

namespace prewarmd {

std::string_view kind_name(const JobKind& kind) {
    return std::visit(
        Overloaded{[](const BlockJob&) { return std::string_view("block"); },
                   [](const FilesystemJob&) { return std::string_view("filesystem"); }},
        kind);
}

const FilesystemTarget* filesystem_of(const JobKind& kind) {
    const auto* job = std::get_if<FilesystemJob>(&kind);
    return job ? &job->fs : nullptr;
}

Result<void> same_disk(const DiskInfo& disk, const Device& device) {
    if (disk.diskseq && device.diskseq() && disk.diskseq != device.diskseq())
        return Error{-ESTALE, disk.devnode + " is another disk now (sequence number " +
                                  std::to_string(device.diskseq()) + ", not " +
                                  std::to_string(disk.diskseq) + ")"};
    return {};
}

Result<std::unique_ptr<JobWork>> open_work(const JobSpec& spec, const EventSink& events) {
    return std::visit(Overloaded{[&](const BlockJob&) { return open_block_work(spec, events); },
                                 [&](const FilesystemJob& kind) {
                                     return open_filesystem_work(spec, kind, events);
                                 }},
                      spec.kind);
}

Result<std::unique_ptr<JobRunner>> JobRunner::open(const JobSpec& spec, EventSink events) {
    auto work = open_work(spec, events);
    if (!work)
        return work.error();
    return set_up(spec, std::move(*work), std::move(events));
}

Result<std::unique_ptr<JobRunner>>
JobRunner::set_up(const JobSpec& spec, std::unique_ptr<JobWork> work, EventSink events) {
    const auto& device = work->device();
    JobSpec s = spec;
    auto chunk = choose_chunk_bytes(s.options.chunk_bytes, s.chunk_explicit,
                                    s.options.backend_block_bytes, device.geometry());
    if (!chunk)
        return Error{chunk.error().err, s.path + ": " + chunk.error().message};
    // The buffers stay as the settings size them (config.hh, buffer_budget_bytes).
    const unsigned depth = fit_queue_depth(s.options.queue_depth, s.options.chunk_bytes, *chunk);
    if (depth == 0)
        return Error{-E2BIG,
                     s.path + ": the chunk size grows to " + format_size(*chunk) +
                         " for this device, more than the " +
                         format_size(uint64_t{s.options.queue_depth} * s.options.chunk_bytes) +
                         " of buffers queue_depth x chunk allow: set a chunk that fits"};
    if (depth < s.options.queue_depth && events)
        events(EventLevel::info, "queue depth " + std::to_string(depth) + ", not " +
                                     std::to_string(s.options.queue_depth) +
                                     ": the chunk grew to " + format_size(*chunk) +
                                     " for this device");
    s.options.queue_depth = depth;
    s.options.chunk_bytes = *chunk;
    std::string note;
    auto engine = make_io_engine(s.io_engine, device.fd(), s.options.queue_depth, note);
    if (!engine)
        return engine.error();
    if (!note.empty() && events)
        events(EventLevel::warning, note);
    auto make_engine = [kind = s.io_engine, fd = device.fd(), depth = s.options.queue_depth]() {
        std::string unused;
        return make_io_engine(kind, fd, depth, unused);
    };
    return std::make_unique<JobRunner>(s, std::move(work), std::move(events),
                                       std::move(make_engine), std::move(*engine));
}

JobRunner::JobRunner(const JobSpec& spec, std::unique_ptr<JobWork> work, EventSink events,
                     std::function<Result<std::unique_ptr<IoEngine>>()> make_engine,
                     std::unique_ptr<IoEngine> engine)
    : m_spec(spec), m_work(std::move(work)), m_events(std::move(events)),
      m_make_engine(std::move(make_engine)), m_target(m_work->target()),
      m_probe(spec.probe_before) {
    m_target.identity = spec.identity;
    // The chunks as the plan turns out, once the probe has spoken (on the job's
    // thread, as the job starts).
    m_target.source = [this](const RangeSet& done, uint64_t chunk) {
        return m_work->source(m_plan, done, chunk);
    };
    m_job = std::make_unique<PrefillJob>(m_spec.options, m_target, std::move(engine),
                                         m_work->device(), m_events);
}

ProgressSnapshot JobRunner::run() {
    if (!plan())
        return m_final;
    m_final = m_job->run();
    if (m_final.status != JobStatus::visited)
        return m_final;
    if (!m_work->probes_after())
        judge_in_claim();
    else if (m_plan.sparse())
        prove_sparse();
    else
        probe_after();
    return m_final;
}

std::string JobRunner::not_probed() const {
    return "written, not proven warm: not probed" +
           (m_unprobed.empty() ? std::string() : " (" + m_unprobed + ")");
}

// Every chunk visited: the outcome, and the proof or the lack of one as its reason.
void JobRunner::conclude(JobStatus outcome, std::string reason) {
    m_final.status = outcome;
    m_final.reason = std::move(reason);
    if (m_events)
        m_events(outcome == JobStatus::warm ? EventLevel::info : EventLevel::warning,
                 std::string(to_string(outcome)) + ": " + m_final.reason);
}

// A filesystem job's proof is its probe in the claim, made before it wrote: zero
// writes found kept there, or the fill written where they are discarded, allocate
// what the job wrote. Its places are the filesystem's again by now: none is probed after.
void JobRunner::judge_in_claim() {
    const auto cold = probe().cold;
    if (m_plan.fill && !m_plan.sparse())
        return conclude(JobStatus::warm, "filled: zero writes are discarded here, the fill "
                                         "is data and the backend allocates it");
    if (m_spec.options.mode == Mode::read)
        return conclude(JobStatus::unproven, "read mode writes nothing: nothing to prove");
    if (!cold)
        return conclude(JobStatus::unproven, not_probed());
    if (cold->zero_writes == ZeroWrites::kept)
        return conclude(JobStatus::warm, "zero writes kept, as the probe in the claim found (" +
                                             cold->zero_writes_note + ")");
    conclude(JobStatus::unproven, "written, not proven warm: zero writes " +
                                      std::string(to_string(cold->zero_writes)) + " (" +
                                      cold->zero_writes_note + ")");
}

void JobRunner::command(JobCommand command) {
    std::lock_guard lock(m_job_mutex);
    if (std::holds_alternative<StopCommand>(command))
        m_stopped = true; // no full pass after a sparse one, then
    m_job->command(std::move(command));
}

ProgressSnapshot JobRunner::snapshot() const {
    std::lock_guard lock(m_job_mutex);
    return m_job->snapshot();
}

ProbeFigures JobRunner::probe() const {
    std::lock_guard lock(m_probe_mutex);
    return m_probe;
}

SomeoneElse JobRunner::someone_else() {
    return [this] { return m_work->arrived(); };
}

// Ends the job before it wrote anything: it steps aside, or its plan cannot be followed.
void JobRunner::end_before(JobStatus status, std::string reason) {
    m_final = m_job->snapshot();
    m_final.status = status;
    m_final.reason = std::move(reason);
    if (!m_events)
        return;
    if (status == JobStatus::stepped_aside)
        m_events(EventLevel::info, "stepping aside before the job: " + m_final.reason);
    else
        m_events(EventLevel::warning, std::string(to_string(status)) + ": " + m_final.reason);
}

// The probe before (where the kind makes one), the backend block it found, and the
// plan. False when the job ends here.
bool JobRunner::plan() {
    // Resumed: the cold probe the first run made, kept in its checkpoint (a record
    // may have been saved before it, or be gone), proves this one too.
    if (!m_probe.cold && !m_spec.options.checkpoint_path.empty())
        if (auto saved = load_checkpoint(m_spec.options.checkpoint_path); saved && *saved) {
            std::lock_guard lock(m_probe_mutex);
            m_probe = (*saved)->probe;
        }
    auto before = m_work->probe_before(m_spec, m_probe);
    if (before && !*before && before->error().err == -EBUSY) {
        end_before(JobStatus::stepped_aside, before->error().message);
        return false;
    }
    const ColdProbe* cold = before && *before ? &**before : nullptr;
    if (before && !*before)
        m_unprobed = before->error().message;
    if (cold) {
        if (m_events)
            m_events(EventLevel::info,
                     std::string(m_work->probe_name()) + ": first writes p50 " +
                         format_ms(cold->cold.p50_s) + ", p99 " + format_ms(cold->cold.p99_s) +
                         ", written again p50 " + format_ms(cold->rewrite.p50_s) +
                         "; granularity " +
                         (cold->granularity_bytes ? format_size(cold->granularity_bytes)
                                                  : std::string("unknown")) +
                         "; zero writes " + std::string(to_string(cold->zero_writes)) + " (" +
                         cold->zero_writes_note + ")");
        std::lock_guard lock(m_probe_mutex);
        m_probe.cold = *cold;
    }
    if (m_spec.backend_block_auto) {
        const bool found = cold && cold->granularity_bytes;
        const uint64_t block = std::min<uint64_t>(found ? cold->granularity_bytes : 2ULL << 20,
                                                  m_spec.options.chunk_bytes);
        m_job->set_backend_block(block);
        if (m_events)
            m_events(EventLevel::info, "backend block " + format_size(block) +
                                           (found  ? " (as probed)"
                                            : cold ? " (the probe could not tell)"
                                                   : " (not probed)"));
    }
    PlanInputs inputs;
    inputs.strategy = m_spec.strategy;
    inputs.mode = m_spec.options.mode;
    inputs.probe = std::move(before);
    inputs.probe_name = m_work->probe_name();
    inputs.backend_block_bytes = m_spec.options.backend_block_bytes;
    inputs.backend_block_explicit = m_spec.backend_block_explicit;
    inputs.piece_bytes =
        std::max<uint64_t>(probe_io_bytes, m_work->device().geometry().logical_block_bytes);
    inputs.fill_allowed = m_work->fills_free_space();
    auto plan = choose_plan(inputs);
    if (!plan) {
        end_before(JobStatus::failed, plan.error().message);
        return false;
    }
    m_plan = *plan;
    m_job->set_fill(m_plan.fill);
    m_job->set_probe(probe());
    if (!m_plan.note.empty() && m_events)
        m_events(m_plan.fill ? EventLevel::warning : EventLevel::info, m_plan.note);
    return true;
}

// After a sparse job: the middle of blocks it wrote only at their start must be
// warm. Not so: "sparse" fails saying so; "auto" writes every byte after all.
void JobRunner::prove_sparse() {
    const auto cold = probe().cold;
    if (!cold)
        return conclude(JobStatus::unproven, "sparse writes not proven: no cold probe to compare");
    auto warm = probe_warm(m_work->device(), cold->strides, someone_else(), m_plan.block / 2);
    if (!warm) {
        m_final.status = warm.error().err == -EBUSY ? JobStatus::stepped_aside : JobStatus::failed;
        m_final.reason = "probe after: " + warm.error().message;
        if (m_events)
            m_events(EventLevel::warning, m_final.reason);
        return;
    }
    {
        std::lock_guard lock(m_probe_mutex);
        m_probe.warm = *warm;
    }
    if (!still_cold(*cold, *warm))
        return conclude(JobStatus::warm, "the middle of the blocks is warm (" +
                                             format_ratio(warm->ratio_p50) +
                                             " a place written before)");
    const std::string why = "the middle of the blocks is still cold after sparse writes (" +
                            format_ratio(warm->ratio_p50) + " a place written before)";
    if (m_spec.strategy == Strategy::sparse) {
        m_final.status = JobStatus::failed;
        m_final.reason = why;
        if (m_events)
            m_events(EventLevel::warning, why);
        return;
    }
    if (m_events)
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
            return conclude(JobStatus::unproven, why + "; stopped before full writes");
        // The sparse job's checkpoint covers every block: the full one starts afresh.
        std::error_code ec;
        std::filesystem::remove(m_spec.options.checkpoint_path, ec);
        m_plan = Plan{.fill = m_plan.fill};
        m_job = std::make_unique<PrefillJob>(m_spec.options, m_target, std::move(*engine),
                                             m_work->device(), m_events);
        m_job->set_fill(m_plan.fill);
        m_job->set_probe(probe());
    }
    m_final = m_job->run();
    if (m_final.status == JobStatus::visited)
        probe_after();
}

// Every byte written: the proof. Zero writes found kept (by a first-write penalty,
// or costing more than reads of never-written space) mean the backend allocated what
// the job wrote; where the probe found a penalty, the warm probe also shows that it
// is gone, half a stride from every place the cold probe wrote (docs/engine.md).
// Zero writes not found kept: written, not proven warm.
void JobRunner::probe_after() {
    const auto cold = probe().cold;
    if (m_spec.options.mode == Mode::read)
        return conclude(JobStatus::unproven, "read mode writes nothing: nothing to prove");
    if (!m_target.geometry.is_block_device) {
        // A file: its filesystem's own account of its holes says.
        const auto size = m_target.geometry.size_bytes;
        auto data = data_extents(m_work->device().fd(), size);
        if (!data)
            return conclude(JobStatus::unproven,
                            "written, not proven warm: " + data.error().message);
        const uint64_t holes = size - std::min(size, data->total_bytes());
        if (holes)
            return conclude(JobStatus::unproven, "written, not proven warm: " + format_size(holes) +
                                                     " of holes left (SEEK_HOLE)");
        return conclude(JobStatus::warm, "no hole left: every byte is allocated (SEEK_HOLE)");
    }
    if (!m_spec.probe || !cold)
        return conclude(JobStatus::unproven, not_probed());
    if (!cold->strides)
        return conclude(JobStatus::unproven,
                        "written, not proven warm: the disk is too small to probe");
    if (cold->zero_writes == ZeroWrites::discarded)
        return conclude(JobStatus::not_warmable,
                        "zero writes are discarded here (" + cold->zero_writes_note +
                            "): a block job warms nothing; its filesystem's job, once "
                            "mounted, does");
    if (cold->zero_writes != ZeroWrites::kept)
        return conclude(JobStatus::unproven, "written, not proven warm: zero writes " +
                                                 std::string(to_string(cold->zero_writes)) + " (" +
                                                 cold->zero_writes_note + ")");
    if (!has_penalty(*cold))
        return conclude(JobStatus::warm, "every block written, and zero writes are kept (" +
                                             cold->zero_writes_note + ")");
    auto warm = probe_warm(m_work->device(), cold->strides, someone_else());
    if (!warm) {
        if (warm.error().err == -EBUSY) {
            m_final.status = JobStatus::stepped_aside;
            m_final.reason = "probe after: " + warm.error().message;
            if (m_events)
                m_events(EventLevel::info, "stepping aside: " + m_final.reason);
            return;
        }
        return conclude(JobStatus::unproven,
                        "written, not proven warm: probe after: " + warm.error().message);
    }
    {
        std::lock_guard lock(m_probe_mutex);
        m_probe.warm = *warm;
    }
    if (still_cold(*cold, *warm))
        return conclude(JobStatus::unproven,
                        "written, not proven warm: the warm places still write " +
                            format_ratio(warm->ratio_p50) +
                            " slower than places written before (the warming did not stick)");
    conclude(JobStatus::warm, "warm places p50 " + format_ms(warm->warm.p50_s) + ", " +
                                  format_ratio(penalty_ratio(cold->cold, warm->warm)) +
                                  " faster than cold");
}

namespace {

class ThreadedJob final : public RunningJob {
public:
    ThreadedJob(std::unique_ptr<JobRunner> runner, std::function<void()> on_finished)
        : m_runner(std::move(runner)), m_thread([this, done = std::move(on_finished)] {
              m_final = m_runner->run();
              m_finished = true;
              done();
          }) {}
    ~ThreadedJob() override {
        if (m_thread.joinable()) {
            command(StopCommand{JobStatus::cancelled, "the daemon is stopping"});
            m_thread.join();
        }
    }

    ProgressSnapshot snapshot() const override { return m_runner->snapshot(); }
    void command(JobCommand command) override { m_runner->command(std::move(command)); }
    bool finished() const override { return m_finished; }
    ProbeFigures probe() const override { return m_runner->probe(); }
    ProgressSnapshot wait() override {
        if (m_thread.joinable())
            m_thread.join();
        return m_final;
    }

private:
    std::unique_ptr<JobRunner> m_runner;
    ProgressSnapshot m_final;
    std::atomic<bool> m_finished{false};
    std::thread m_thread;
};

} // namespace

std::unique_ptr<RunningJob> start_thread(std::unique_ptr<JobRunner> runner,
                                         std::function<void()> on_finished) {
    return std::make_unique<ThreadedJob>(std::move(runner), std::move(on_finished));
}

} // namespace prewarmd
