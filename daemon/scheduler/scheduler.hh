// The jobs across disks: one per disk identity, each disk through the states of
// scheduler/disk_state.hh (every change through set_state, which checks the table;
// an enter_* function per state; one place, job_ended, where a job's end is
// handled); the auto policy, the attach grace and the boot wait; at most
// max_parallel running; a total rate shared by running jobs; commands by disk id;
// records kept so that a restart resumes what was running and leaves what the user
// stopped.
//
// Queue order: jobs asked for (API, CLI) first, then disks in the order they
// became ready (attached, quiet for the grace, boot finished).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.hh"
#include "config/config.hh"
#include "control/schema.hh"
#include "engine/deadline.hh"
#include "scheduler/disk_state.hh"
#include "scheduler/job_host.hh"
#include "state/state_dir.hh"

namespace prewarmd {

struct DiskView {
    std::string identity;
    DiskInfo disk;
    bool attached = false;
    DiskState state = DiskState::discovered;
    std::string reason;
    bool matched = false;
    std::string match_reason;
    Verdict verdict = Verdict::refused;
    std::vector<std::string> verdict_reasons;
    DiskFacts facts;
    bool requested = false;
    ProgressSnapshot progress;
    bool exclusive = false; // its job holds the disk to itself (O_EXCL): asked for
    std::string adaptive;   // while its job is held or backed off: how and why
    ProbeFigures probe;
    // What its job warms (queued or running): the disk, or a filesystem's free space.
    JobKind kind = BlockJob{};
    // With a filesystem: systemd's weekly fstrim is enabled, which discards its
    // free space and may make a thin backend's blocks cold again.
    bool fstrim_timer_active = false;
    int64_t first_seen_unix = 0; // this run
    int64_t state_since_unix = 0;
    // Its jobs of this run, by how each ended (not a hold's or a shutdown's stop).
    std::map<JobStatus, uint64_t> job_ends;
    // A start's deadline while its job runs or waits to resume: when, and how the
    // job keeps to it.
    std::optional<Deadline> deadline;
    DeadlinePace pace;

    // The share warmed, 0 to 1: a disk never warmed has no extent yet (0, not the
    // engine's "nothing left", 1) unless its job finished.
    double progress_ratio() const {
        return progress.total_bytes ? progress.ratio() : (is_finished(state) ? 1 : 0);
    }
};

// A start's options (control/schema.hh's start_fields), as the scheduler takes them.
struct StartRequest {
    std::optional<Mode> mode;
    std::optional<uint64_t> rate_bytes_per_s; // its own rate, outside the shared budget
    std::optional<unsigned> queue_depth;
    std::optional<uint64_t> within_s; // warm within this long from now: a deadline
    std::optional<int64_t> deadline_unix; // or by then (both: the sooner)

    // A value checked against its field (check_value).
    void set(const Field& field, const FieldValue& value);
};

// The settings that may change at run time (control/schema.hh's setting_fields),
// those given in one change.
struct SettingsChange {
    std::optional<uint64_t> total_rate_bytes_per_s;
    std::optional<unsigned> max_parallel;
    std::optional<AutoPrefill> auto_prefill;

    // A value checked against its field (check_value).
    void set(const Field& field, const FieldValue& value);
};

// late: a job's deadline can no longer be met, or it fell behind it.
enum class DiskChange { added, state, removed, warm_again, late };

class Scheduler {
public:
    struct Hooks {
        // Watch this disk for the attach grace; on_grace() gives the outcome.
        std::function<void(const std::string& identity, const DiskInfo& disk)> watch_grace;
        // Watch it until nobody has used it for the grace (after a job stepped
        // aside); on_grace() says when.
        std::function<void(const std::string& identity, const DiskInfo& disk)> watch_quiet;
        std::function<void(const std::string& identity)> forget_grace;
        // A job's thread ended: call reap() from the loop. Called from that thread.
        std::function<void()> wake;
        // One line per decision, with the disk's id.
        std::function<void(bool warning, const std::string& line)> log;
        // A disk came, went, changed state, or was given back (warm_again): for the
        // event stream, D-Bus and the webhooks.
        std::function<void(DiskChange change, const std::string& identity)> changed;
    };

    // `config` is the daemon's one copy: the scheduler reads it as it is now, and
    // changes the settings the API and D-Bus may change (until the next reload).
    Scheduler(Config& config, const StateDir& state, JobHost& host, Hooks hooks);
    ~Scheduler();

    // From discovery.
    void on_attached(const DiskInfo& disk);
    void on_detached(const DiskInfo& disk);
    void on_grace(const std::string& identity, bool in_use, const std::string& why);
    void set_boot_finished(bool finished);
    // The system's mount table changed: disks left to their users are warmed
    // through a filesystem of theirs that is mounted now.
    void mounts_changed();
    // Called from the loop after a job's thread said it ended.
    void reap();

    // Commands, by disk id. Errors: -ENOENT (no such disk), -EBUSY/-EINVAL (not now, why).
    Result<void> start(const std::string& identity, const StartRequest& request);
    Result<void> pause(const std::string& identity);
    Result<void> resume(const std::string& identity);
    Result<void> cancel(const std::string& identity);
    Result<void> release(const std::string& identity);
    // Any of the above (start takes `start`).
    Result<void> act(const std::string& identity, DiskAction action, const StartRequest& start);
    // A probe asked for (the API): begin_probe checks the disk may be probed now (no
    // job on it, attached, not refused) and keeps jobs off it until end_probe, which
    // keeps the figures. The probe itself runs on the caller's thread, not here.
    struct ProbeTicket {
        DiskInfo disk;
        ProbeFigures before;
    };
    Result<ProbeTicket> begin_probe(const std::string& identity);
    void end_probe(const std::string& identity, const Result<ProbeFigures>& figures);

    // Settings changed over the API or D-Bus, until the next reload: all or none;
    // over_budget where the jobs' buffers would exceed buffer_budget_bytes.
    Result<void> change(const SettingsChange& change);
    // "" when `config`'s jobs, at the deepest queue a start here asked for, fit the
    // buffer budget; else why not (a reload is refused on it).
    std::string over_budget(const Config& config) const;
    void set_total_rate(uint64_t rate_bytes_per_s);
    // Adaptive mode: every running job's rate times `factor` (0 holds them, 1 is as
    // configured); `reference` stands for total_rate when that is unlimited; `why`
    // is what the disks' views say of it ("" at full rate).
    void set_pressure(double factor, uint64_t reference_bytes_per_s, std::string why);
    // Every second: the jobs with a deadline paced again (engine/deadline.hh).
    void pace_deadlines();
    void set_max_parallel(unsigned max_parallel);
    void set_auto_prefill(AutoPrefill policy);
    // The config was reloaded: disks not yet taken up are judged again by it.
    void config_changed();

    // The system is about to sleep or shut down (`why`): every job stops after its
    // chunks in flight, checkpointed, and closes its disk; the running ones wait
    // (state waiting) and no job starts until release_hold(). Returns when all
    // stopped. A paused job stays paused.
    void hold(const std::string& why);
    void release_hold();
    bool held() const { return m_held; }
    bool boot_finished() const { return m_boot_finished; }

    // SIGTERM: every job stops after its chunks in flight and checkpoints; each
    // stays recorded as it was, to resume at the next start. Returns when all did.
    void shutdown();

    // Records that could not be saved (the state directory full) are tried again
    // at this time, until they are: a restart meanwhile would find the old ones.
    std::optional<Clock::time_point> next_save_retry() const { return m_save_retry; }
    void retry_saves();

    // Warm disks are watched for discards (fstrim, mkfs, blkdiscard): the kernel's
    // count, looked at this often while one is warm. Past 1% of a disk since it
    // was warm, its backend may have made those blocks cold again: the disk is
    // judged afresh and warmed again (docs/daemon.md).
    std::optional<Clock::time_point> next_discard_check() const;
    void check_discards();

    std::vector<DiskView> disks() const;
    std::optional<DiskView> disk(const std::string& identity) const;
    // One line for systemd's STATUS=: "warming xvdb 42% at 120 MiB/s, 1 queued".
    std::string status_line() const;
    bool busy() const; // any job running
    const Config& config() const { return m_config; }
    // Changes set_state refused: a bug each (the tests check for none).
    unsigned illegal_transitions() const { return m_illegal_transitions; }

private:
    struct Entry;
    struct Stopping;
    Entry& entry_for(const DiskInfo& disk);
    Entry* find(const std::string& identity);
    const Entry* find(const std::string& identity) const;
    void decide(Entry& entry);
    void judge(Entry& entry);
    void watch_discards(Entry& entry);
    void warm_again(Entry& entry, uint64_t discarded);
    void forget_detached(Entry& entry);
    void attach_back(Entry& entry);
    void schedule();
    void rebalance();
    void late(Entry& entry);
    void stop_job(Entry& entry, Stopping stopping);
    void step_aside(Entry& entry);
    void wait_until_quiet(Entry& entry, const std::string& why);
    void enter_grace(Entry& entry);
    bool held_off(Entry& entry, const std::string& prefix);
    bool take_up_filesystem(Entry& entry);
    bool warmed_through_filesystem(const Entry& entry, DiskState state) const;
    void job_ended(Entry& entry);

    // The states, each entered through its function, each change through set_state.
    void set_state(Entry& entry, DiskState state, std::string reason);
    void enter_discovered(Entry& entry, std::string reason);
    void enter_skipped(Entry& entry, std::string reason);
    void enter_waiting(Entry& entry, std::string reason);
    void enter_ready(Entry& entry); // queued, or waiting for the boot
    void enter_queued(Entry& entry, std::string reason);
    void enter_running(Entry& entry, std::unique_ptr<RunningJob> job);
    void enter_paused(Entry& entry, std::string reason);
    void enter_end(Entry& entry, DiskState state, std::string reason);

    void save(Entry& entry);
    JobSpec spec_for(const Entry& entry) const;
    std::optional<uint64_t> override_rate(const Entry& entry) const;
    unsigned running_jobs() const;
    Result<void> recorded(const Entry& entry, const std::string& what) const;
    void log(bool warning, const Entry& entry, const std::string& message) const;

    Config& m_config;
    double m_pressure = 1;
    uint64_t m_pressure_reference = 0;
    std::string m_pressure_why;
    const StateDir& m_state;
    JobHost& m_host;
    Hooks m_hooks;
    std::map<std::string, std::unique_ptr<Entry>> m_entries; // by identity
    bool m_boot_finished = true;
    uint64_t m_next_order = 0;
    bool m_shutting_down = false;
    std::optional<Clock::time_point> m_save_retry;
    std::optional<Clock::time_point> m_discard_check;
    bool m_held = false;
    unsigned m_illegal_transitions = 0;
};

} // namespace prewarmd
