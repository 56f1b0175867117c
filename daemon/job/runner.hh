// One job from start to proof, for every kind and strategy, in the daemon and in
// `prewarmd prefill` alike:
//
//   open (job/work.hh) -> probe before -> plan (job/plan.hh) -> PrefillJob
//     -> visited: the proof after (sparse: the middle of the blocks must be warm; not
//        so under "auto": every byte after all, a second PrefillJob) or the warm probe
//     -> the outcome: warm, unproven or not_warmable, the proof or its lack the reason
//
// The runner runs on one thread; other threads steer it with commands, as they
// steer a PrefillJob, and read its snapshots and probes.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>

#include "job/plan.hh"
#include "job/spec.hh"
#include "job/work.hh"

namespace prewarmd {

class JobRunner {
public:
    // Opens what the spec names and sets the job up: errors say why it cannot start.
    static Result<std::unique_ptr<JobRunner>> open(const JobSpec& spec, EventSink events);
    // The job set up on work already open (open_work): its chunk size and I/O
    // engine. Its errors are the job's, not the device's (io_uring refused, say).
    static Result<std::unique_ptr<JobRunner>>
    set_up(const JobSpec& spec, std::unique_ptr<JobWork> work, EventSink events);
    JobRunner(const JobSpec& spec, std::unique_ptr<JobWork> work, EventSink events,
              std::function<Result<std::unique_ptr<IoEngine>>()> make_engine,
              std::unique_ptr<IoEngine> engine);

    // On the calling thread, until the job ends; the final snapshot.
    ProgressSnapshot run();
    void command(JobCommand command);
    ProgressSnapshot snapshot() const;
    ProbeFigures probe() const;
    const Geometry& geometry() const { return m_target.geometry; }

private:
    bool plan();
    void prove_sparse();
    void probe_after();
    void judge_in_claim();
    void conclude(JobStatus outcome, std::string reason);
    std::string not_probed() const;
    void end_before(JobStatus status, std::string reason);
    SomeoneElse someone_else();

    JobSpec m_spec;
    std::unique_ptr<JobWork> m_work;
    EventSink m_events;
    std::function<Result<std::unique_ptr<IoEngine>>()> m_make_engine;
    Plan m_plan; // on the job's thread; the source asks it when the job starts
    JobTarget m_target;
    mutable std::mutex m_probe_mutex;
    ProbeFigures m_probe;
    std::string m_unprobed;         // why the probe before could not be made
    mutable std::mutex m_job_mutex; // m_job is replaced once, for full writes after sparse
    bool m_stopped = false;
    std::unique_ptr<PrefillJob> m_job;
    ProgressSnapshot m_final;
};

// The runner on a thread of its own; `on_finished` is called from that thread.
std::unique_ptr<RunningJob> start_thread(std::unique_ptr<JobRunner> runner,
                                         std::function<void()> on_finished);

} // namespace prewarmd
