#include "scheduler/scheduler.hh"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <ctime>

#include "base/units.hh"
#include "control/refusal.hh"
#include "discovery/identity.hh"
#include "safety/filesystem.hh"

namespace prewarmd {

// Why the scheduler stops a job itself, and so how its disk ends up.
struct Scheduler::Stopping {
    enum class Why { cancel, release, detach, hold, shutdown } why;
    std::string reason;

    // How the job is told to end; a job that ends otherwise ended by itself.
    JobStatus as() const {
        switch (why) {
        case Why::release:
            return JobStatus::released;
        case Why::detach:
            return JobStatus::detached;
        default:
            return JobStatus::cancelled;
        }
    }
};

struct Scheduler::Entry {
    std::string identity;
    DiskInfo disk;
    bool attached = false;
    DiskState state = DiskState::discovered;
    std::string reason;
    MatchDecision match;
    Classification look;
    bool has_record = false;
    // Asked for (API, CLI, or its record says so), and with what.
    bool requested = false;
    StartRequest asked;
    bool grace_watched = false;
    bool quiet_watched = false; // its job stepped aside: waits until the disk is quiet
    uint64_t order = 0;         // in the queue
    std::unique_ptr<RunningJob> job;
    std::optional<Stopping> stopping; // set while the scheduler stops the job
    std::optional<DiskInfo> back;     // attached again while its old job ends
    ProgressSnapshot last;
    ProbeFigures probe;   // from the record, or the job's
    bool probing = false; // a probe asked for runs: no job starts meanwhile
    // What its job warms (queued or running): the disk, or a filesystem's free space.
    JobKind kind = BlockJob{};
    int64_t first_seen_unix = 0;
    int64_t state_since_unix = 0;
    std::map<JobStatus, uint64_t> job_ends; // DiskView::job_ends
    std::optional<Deadline> deadline; // a start's, until its job ends for good
    DeadlinePace pace;
    std::string unsaved; // why its record could not be saved ("" once it was)
    std::string volume;  // which volume its record and job are for (DiskInfo::volume)
    // Warm: the kernel's count of bytes discarded on it then (check_discards).
    std::optional<uint64_t> discarded_at_warm;
    bool discards_unread = false; // said once: the count could not be read
};

namespace {

Classification not_examined() {
    Classification c;
    c.reasons.push_back("not examined: not considered");
    return c;
}

} // namespace

Scheduler::Scheduler(Config& config, const StateDir& state, JobHost& host, Hooks hooks)
    : m_config(config), m_state(state), m_host(host), m_hooks(std::move(hooks)) {
    auto loaded = m_state.load();
    for (const auto& damaged : loaded.set_aside)
        if (m_hooks.log)
            m_hooks.log(true, "state: " + damaged + ": not trusted, the disk starts afresh");
    for (const auto& r : loaded.records) {
        const auto recorded = parse_disk_state(r.state);
        if (!recorded) {
            if (m_hooks.log)
                m_hooks.log(true, "state: jobs/" + r.identity + ".json: unknown state '" + r.state +
                                      "': not trusted, the disk starts afresh");
            continue;
        }
        auto entry = std::make_unique<Entry>();
        entry->identity = r.identity;
        entry->state = *recorded;
        entry->reason = r.reason;
        entry->has_record = true;
        entry->requested = r.requested;
        entry->asked.rate_bytes_per_s = r.rate_bytes_per_s;
        entry->asked.mode = parse_name<Mode>(r.mode);
        entry->disk.name = r.name;
        entry->disk.size_bytes = r.size_bytes;
        entry->last.done_bytes = r.done_bytes;
        entry->last.written_bytes = r.written_bytes;
        entry->last.skipped_bytes = r.skipped_bytes;
        entry->last.total_bytes = r.size_bytes;
        entry->probe = r.probe;
        entry->volume = r.volume;
        if (r.deadline_unix)
            entry->deadline =
                Deadline{r.deadline_unix->first, r.deadline_unix->second, r.size_bytes};
        m_entries[r.identity] = std::move(entry);
    }
}

Scheduler::~Scheduler() {
    shutdown();
}

void Scheduler::log(bool warning, const Entry& e, const std::string& message) const {
    if (m_hooks.log)
        m_hooks.log(warning, e.identity + " (" + e.disk.name + "): " + message);
}

Scheduler::Entry* Scheduler::find(const std::string& identity) {
    const auto it = m_entries.find(identity);
    return it == m_entries.end() ? nullptr : it->second.get();
}

const Scheduler::Entry* Scheduler::find(const std::string& identity) const {
    const auto it = m_entries.find(identity);
    return it == m_entries.end() ? nullptr : it->second.get();
}

Scheduler::Entry& Scheduler::entry_for(const DiskInfo& disk) {
    const auto identity = disk_identity(disk);
    auto& slot = m_entries[identity];
    // Another volume in the slot (where the backend tells them apart), or one that
    // cannot be told now where the record knew it: nothing of the one before
    // applies to it, not its job, its checkpoint or its request.
    if (slot && !slot->job && !slot->volume.empty() && slot->volume != disk.volume) {
        if (m_hooks.log)
            m_hooks.log(false, identity + " (" + disk.name + "): " +
                                   (disk.volume.empty()
                                        ? "its volume cannot be read now (its record's: " +
                                              slot->volume + ")"
                                        : "another volume in its slot (" + disk.volume +
                                              ", not " + slot->volume + ")") +
                                   ": its record and checkpoint are dropped, it is judged anew");
        if (slot->has_record)
            m_state.forget(identity);
        slot.reset();
    }
    if (!slot) {
        slot = std::make_unique<Entry>();
        slot->identity = identity;
    }
    slot->disk = disk;
    if (!disk.volume.empty())
        slot->volume = disk.volume;
    return *slot;
}

unsigned Scheduler::running_jobs() const {
    return static_cast<unsigned>(
        std::count_if(m_entries.begin(), m_entries.end(),
                      [](const auto& kv) { return kv.second->job != nullptr; }));
}

void Scheduler::save(Entry& e) {
    JobRecord r;
    r.identity = e.identity;
    // A stop asked for is recorded as where it leads while the job ends: a restart
    // meanwhile must not take the job up again.
    const bool asked_stop = e.stopping && (e.stopping->why == Stopping::Why::cancel ||
                                           e.stopping->why == Stopping::Why::release);
    r.state = std::string(to_string(asked_stop ? state_after(e.stopping->as()) : e.state));
    r.reason = asked_stop ? e.stopping->reason : e.reason;
    r.mode = std::string(to_string(e.asked.mode.value_or(m_config.mode)));
    r.requested = e.requested;
    r.rate_bytes_per_s = e.asked.rate_bytes_per_s;
    if (e.deadline)
        r.deadline_unix = {e.deadline->start_unix, e.deadline->at_unix};
    r.name = e.disk.name;
    r.size_bytes = e.disk.size_bytes;
    const auto progress = e.job ? e.job->snapshot() : e.last;
    r.done_bytes = progress.done_bytes;
    r.written_bytes = progress.written_bytes;
    r.skipped_bytes = progress.skipped_bytes;
    r.updated_unix = now_unix();
    r.probe = e.job ? e.job->probe() : e.probe;
    r.volume = e.volume;
    auto saved = m_state.save(r);
    if (saved) {
        if (!e.unsaved.empty())
            log(false, e, "its record is saved now");
        e.unsaved.clear();
        return;
    }
    if (e.unsaved.empty())
        log(true, e,
            "cannot save its record (" + saved.error().message +
                "): tried again every 5 s; until then a restart would find the one before");
    e.unsaved = saved.error().message;
    if (!m_save_retry)
        m_save_retry = Clock::now() + std::chrono::seconds(5);
}

// A command in force whose record could not be saved says so (docs/api.md): until
// the record is saved, a restart would find the one before.
Result<void> Scheduler::recorded(const Entry& e, const std::string& what) const {
    if (e.unsaved.empty())
        return {};
    return refuse(Refusal::not_recorded, e.identity + " is " + what +
                                             ", but its record could not be saved (" + e.unsaved +
                                             "): until it is, a restart would find the one "
                                             "before; make room in " +
                                             m_state.path());
}

void Scheduler::retry_saves() {
    m_save_retry.reset();
    for (auto& [identity, e] : m_entries)
        if (!e->unsaved.empty())
            save(*e);
}

// Every change of a disk's state: checked against the table, recorded first (whoever
// reads the log line finds the record saying so), logged, announced.
void Scheduler::set_state(Entry& e, DiskState state, std::string reason) {
    if (e.state == state && e.reason == reason)
        return;
    if (!transition_allowed(e.state, state)) {
        ++m_illegal_transitions;
        log(true, e,
            "BUG: illegal state change " + std::string(to_string(e.state)) + " -> " +
                std::string(to_string(state)) + " (" + reason + "), ignoring");
        return;
    }
    const bool warning = state == DiskState::failed || state == DiskState::detached;
    const std::string change = std::string(to_string(e.state)) + " -> " +
                               std::string(to_string(state)) +
                               (reason.empty() ? "" : ": " + reason);
    e.state = state;
    e.reason = std::move(reason);
    e.state_since_unix = now_unix();
    if (is_recorded(state)) {
        e.has_record = true;
        save(e);
    }
    log(warning, e, change);
    if (m_hooks.changed)
        m_hooks.changed(DiskChange::state, e.identity);
}

void Scheduler::enter_discovered(Entry& e, std::string reason) {
    set_state(e, DiskState::discovered, std::move(reason));
}

void Scheduler::enter_skipped(Entry& e, std::string reason) {
    set_state(e, DiskState::skipped, std::move(reason));
}

void Scheduler::enter_waiting(Entry& e, std::string reason) {
    set_state(e, DiskState::waiting, std::move(reason));
}

// Quiet, or resumed, or asked for: queued once the boot has finished.
void Scheduler::enter_ready(Entry& e) {
    if (!m_boot_finished && !e.requested) {
        enter_waiting(e, "waiting for the boot to finish");
        return;
    }
    e.order = m_next_order++;
    const auto* fs = filesystem_of(e.kind);
    enter_queued(e, fs            ? "the free space of " + fs->fstype + " at " + fs->mount_point
                    : e.requested ? "asked for"
                                  : "");
}

void Scheduler::enter_queued(Entry& e, std::string reason) {
    set_state(e, DiskState::queued, std::move(reason));
}

void Scheduler::enter_running(Entry& e, std::unique_ptr<RunningJob> job) {
    e.job = std::move(job);
    e.stopping.reset();
    set_state(e, DiskState::running, "");
}

void Scheduler::enter_paused(Entry& e, std::string reason) {
    set_state(e, DiskState::paused, std::move(reason));
}

// warm, unproven, not_warmable, failed, cancelled, released, detached.
void Scheduler::enter_end(Entry& e, DiskState state, std::string reason) {
    set_state(e, state, std::move(reason));
    if (state == DiskState::warm)
        watch_discards(e);
    if (is_finished(state))
        log(false, e,
            std::string(to_string(state)) + ": " + format_size(e.last.written_bytes) +
                " written, " + format_size(e.last.skipped_bytes) + " skipped in " +
                std::to_string(e.last.elapsed.count() / 1000) + " s");
}

// The one place where a job's end is handled, whoever waits for it (reap, hold,
// shutdown): joins it, keeps its figures, and moves the disk on.
void Scheduler::job_ended(Entry& e) {
    e.last = e.job->wait();
    e.probe = e.job->probe();
    e.job.reset(); // closes the disk
    const auto stopping = std::exchange(e.stopping, std::nullopt);
    if (!stopping || (stopping->why != Stopping::Why::hold &&
                      stopping->why != Stopping::Why::shutdown))
        ++e.job_ends[e.last.status];
    // A deadline is its job's: one that ended for good leaves none to pace a later
    // job (a warm-again) by; one that resumes (stepped aside, detached, held, shut
    // down) keeps it.
    const bool resumes = e.last.status == JobStatus::stepped_aside ||
                         e.last.status == JobStatus::detached ||
                         (stopping && (stopping->why == Stopping::Why::hold ||
                                       stopping->why == Stopping::Why::shutdown));
    if (!resumes) {
        e.deadline.reset();
        e.pace = {};
    }
    if (filesystem_of(e.kind) && e.last.status == JobStatus::stepped_aside && !m_shutting_down &&
        e.attached) {
        // Unmounted, or its claim taken: the disk is its filesystem's; warmed again
        // through it when (still, or once more) mounted.
        e.kind = BlockJob{};
        enter_skipped(e, "its filesystem job stopped: " + e.last.reason);
        take_up_filesystem(e);
        return;
    }
    if (e.last.status == JobStatus::stepped_aside && !m_shutting_down && e.attached) {
        step_aside(e);
        return;
    }
    if (!stopping || e.last.status != stopping->as()) { // it ended by itself
        const bool unproven = warmed_through_filesystem(e, state_after(e.last.status));
        enter_end(e, state_after(e.last.status),
                  unproven ? e.last.reason + "; a filesystem of it is warmed once mounted"
                           : e.last.reason);
        if (unproven)
            take_up_filesystem(e);
        return;
    }
    switch (stopping->why) {
    case Stopping::Why::cancel:
    case Stopping::Why::release:
    case Stopping::Why::detach:
        enter_end(e, state_after(stopping->as()), stopping->reason);
        return;
    case Stopping::Why::hold:
        // As it was, running or paused: a shutdown resumes it at the next boot.
        save(e);
        if (e.state == DiskState::running)
            enter_waiting(e, stopping->reason);
        return;
    case Stopping::Why::shutdown:
        save(e); // as it was: resumed at the next start
        return;
    }
}

// Someone else is at the disk: the job has let go of it, and the disk waits until
// it has been quiet for the grace (no open, no write), to be judged again then.
void Scheduler::step_aside(Entry& e) {
    wait_until_quiet(e, "stepped aside: " + e.last.reason + "; goes on");
}

// A disk whose job did not finish, by its look just taken: held off while another
// program holds its lock, or left to its users (refused, or holding data its job
// was not asked for). False when its job may go on.
bool Scheduler::held_off(Entry& e, const std::string& prefix) {
    if (e.look.locked) {
        wait_until_quiet(e, e.look.reasons_text() + "; judged");
        return true;
    }
    const bool refused = e.look.verdict == Verdict::refused;
    if (!refused && (e.look.verdict != Verdict::needs_request || e.requested))
        return false;
    enter_skipped(e, prefix + (refused ? "refused: " : "holds data now, warmed only when asked: ") +
                         e.look.reasons_text());
    take_up_filesystem(e);
    return true;
}

// Judged again once the disk has been quiet for the attach grace.
void Scheduler::wait_until_quiet(Entry& e, const std::string& why) {
    enter_waiting(e, why + " once the disk is quiet for " +
                         std::to_string(m_config.attach_grace.count() / 1000) + " s");
    e.grace_watched = true;
    e.quiet_watched = true;
    if (m_hooks.watch_quiet)
        m_hooks.watch_quiet(e.identity, e.disk);
}

// Tells the job to stop; a stop under way is not replaced (a cancel stays a cancel
// when a shutdown comes).
void Scheduler::stop_job(Entry& e, Stopping stopping) {
    if (e.stopping)
        return;
    e.job->command(StopCommand{stopping.as(), stopping.reason});
    e.stopping = std::move(stopping);
}

void StartRequest::set(const Field& field, const FieldValue& value) {
    if (field.key == "mode")
        mode = parse_name<Mode>(std::get<std::string>(value));
    else if (field.key == "rate_bytes_per_s")
        rate_bytes_per_s = std::get<uint64_t>(value);
    else if (field.key == "queue_depth")
        queue_depth = static_cast<unsigned>(std::get<uint64_t>(value));
    else if (field.key == "within_s")
        within_s = std::get<uint64_t>(value);
    else if (field.key == "deadline")
        deadline_unix = static_cast<int64_t>(std::get<uint64_t>(value));
}

void SettingsChange::set(const Field& field, const FieldValue& value) {
    if (field.key == "total_rate_bytes_per_s")
        total_rate_bytes_per_s = std::get<uint64_t>(value);
    else if (field.key == "max_parallel")
        max_parallel = static_cast<unsigned>(std::get<uint64_t>(value));
    else if (field.key == "auto_prefill")
        auto_prefill = parse_name<AutoPrefill>(std::get<std::string>(value));
}

void Scheduler::on_attached(const DiskInfo& disk) {
    if (auto* old = find(disk_identity(disk)); old && old->job) {
        if (old->attached)
            return; // told again (a coldplug, `udevadm trigger`): its job goes on
        // Back before its old job has ended: judged once it has, so that the job's
        // end is not taken for what came back, and the volumes can be compared.
        log(false, *old, "attached again while its job ends: judged once it has");
        old->back = disk;
        return;
    }
    auto& e = entry_for(disk);
    e.attached = true;
    if (!e.first_seen_unix)
        e.first_seen_unix = now_unix();
    if (m_hooks.changed)
        m_hooks.changed(DiskChange::added, e.identity);
    decide(e);
    schedule();
}

// What to do with a disk just attached (or known from a record and back).
void Scheduler::decide(Entry& e) {
    e.match = decide_match(e.disk, m_config.match_rules, m_config.exclude_rules,
                           m_host.protected_disks());
    // A disk the rules leave out is not opened at all: nothing it is not asked to touch.
    e.look = e.match.matched || e.has_record ? m_host.look(e.disk) : not_examined();
    if (e.has_record) {
        switch (e.state) {
        case DiskState::warm:
            log(false, e, "attached; warm before" + (e.reason.empty() ? "" : " (" + e.reason + ")"));
            watch_discards(e);
            return;
        case DiskState::unproven:
        case DiskState::not_warmable:
        case DiskState::paused:
        case DiskState::cancelled:
        case DiskState::released:
        case DiskState::failed:
            log(false, e,
                "attached; " + std::string(to_string(e.state)) + " before" +
                    (e.reason.empty() ? "" : " (" + e.reason + ")"));
            return;
        case DiskState::running:
        case DiskState::queued:
        case DiskState::detached:
        case DiskState::waiting:
            // Its job did not finish. What came back may be another volume in the
            // same slot, or someone's since: judged afresh, and the job goes on
            // only after the attach grace, as for a disk never seen (docs/safety.md).
            if (e.match.matched || e.requested) {
                if (held_off(e, "attached again, "))
                    return;
                log(false, e, "attached; its job goes on after the attach grace");
                enter_grace(e);
                return;
            }
            break;
        default:
            break;
        }
    }
    judge(e);
}

// A disk as if never seen: considered, looked at, and warmed after the attach grace
// when blank.
void Scheduler::judge(Entry& e) {
    if (!e.match.matched) {
        enter_skipped(e, "not considered: " + e.match.reason);
        return;
    }
    if (e.look.locked) {
        wait_until_quiet(e, e.look.reasons_text() + "; judged");
        return;
    }
    switch (e.look.verdict) {
    case Verdict::refused:
        enter_skipped(e, "refused: " + e.look.reasons_text());
        take_up_filesystem(e);
        return;
    case Verdict::needs_request:
        enter_skipped(e, "holds data, warmed only when asked: " + e.look.reasons_text());
        take_up_filesystem(e);
        return;
    case Verdict::eligible:
        break;
    }
    if (m_config.auto_prefill == AutoPrefill::never) {
        enter_discovered(e, "auto_prefill is never: warmed when asked");
        return;
    }
    enter_grace(e);
}

namespace {

constexpr auto discard_check_interval = std::chrono::seconds(10);

} // namespace

void Scheduler::watch_discards(Entry& e) {
    auto discarded = m_host.discarded_bytes(e.disk);
    if (!discarded) {
        e.discarded_at_warm.reset();
        if (!std::exchange(e.discards_unread, true))
            log(true, e, "discards not watched: " + discarded.error().message +
                             " (an fstrim or mkfs would make it cold unseen)");
        return;
    }
    e.discards_unread = false;
    e.discarded_at_warm = *discarded;
    if (!m_discard_check)
        m_discard_check = Clock::now() + discard_check_interval;
}

std::optional<Clock::time_point> Scheduler::next_discard_check() const {
    for (const auto& [id, e] : m_entries)
        if (e->attached && e->state == DiskState::warm && e->discarded_at_warm)
            return m_discard_check;
    return std::nullopt;
}

void Scheduler::check_discards() {
    m_discard_check = Clock::now() + discard_check_interval;
    std::vector<std::pair<Entry*, uint64_t>> given_back;
    for (auto& [id, e] : m_entries) {
        if (!e->attached || e->state != DiskState::warm || !e->discarded_at_warm || e->job)
            continue;
        auto now = m_host.discarded_bytes(e->disk);
        if (!now) {
            watch_discards(*e); // says why, once
            continue;
        }
        if (*now < *e->discarded_at_warm) { // a new device in its place: counted afresh
            e->discarded_at_warm = *now;
            continue;
        }
        const uint64_t since = *now - *e->discarded_at_warm;
        if (since > 0 && since >= std::max<uint64_t>(e->disk.size_bytes / 100, 1 << 20))
            given_back.emplace_back(e.get(), since);
    }
    for (auto& [e, since] : given_back)
        warm_again(*e, since);
    if (!given_back.empty())
        schedule();
}

// Warm, and given back since: the guest discarded part of it (an fstrim gives back
// a filesystem's free space, mkfs the whole disk), and a backend that honours
// discards (qcow2 with discard=unmap) made those blocks cold again. Judged afresh,
// as a disk just attached: a mounted filesystem is warmed through its free space,
// a blank disk after the grace; its old checkpoint says nothing of it now.
void Scheduler::warm_again(Entry& e, uint64_t discarded) {
    e.discarded_at_warm.reset();
    m_state.drop_checkpoint(e.identity);
    e.kind = BlockJob{};
    log(true, e, format_size(discarded) +
                     " discarded since it was warm (fstrim, mkfs, blkdiscard): warmed again");
    if (m_hooks.changed)
        m_hooks.changed(DiskChange::warm_again, e.identity);
    e.match = decide_match(e.disk, m_config.match_rules, m_config.exclude_rules,
                           m_host.protected_disks());
    e.look = e.match.matched ? m_host.look(e.disk) : not_examined();
    judge(e);
}

void Scheduler::enter_grace(Entry& e) {
    enter_waiting(e, "attach grace: watching " +
                         std::to_string(m_config.attach_grace.count() / 1000) +
                         " s for other users");
    e.grace_watched = true;
    if (m_hooks.watch_grace)
        m_hooks.watch_grace(e.identity, e.disk);
}

void Scheduler::on_grace(const std::string& identity, bool in_use, const std::string& why) {
    auto* e = find(identity);
    if (!e || !e->grace_watched || !e->attached)
        return;
    e->grace_watched = false;
    if (e->state != DiskState::waiting)
        return;
    if (std::exchange(e->quiet_watched, false)) {
        // Quiet again after a job stepped aside: what is it now? A disk someone
        // formatted meanwhile is theirs (its filesystem is warmed once mounted).
        log(false, *e, why);
        e->look = m_host.look(e->disk);
        if (held_off(*e, "")) {
            schedule();
            return;
        }
        enter_ready(*e);
        schedule();
        return;
    }
    if (in_use) {
        enter_skipped(*e, "in use during the attach grace: " + why);
        take_up_filesystem(*e);
        schedule();
        return;
    }
    log(false, *e, why);
    enter_ready(*e);
    schedule();
}

// A considered disk left to its users (formatted, mounted, in use) is warmed
// through a filesystem of it that is mounted read-write, ext4 or xfs: its free
// space, online (docs/design.md). True when queued for one. The disks under /,
// /boot and swap are never considered (match rules), so never taken up here.
bool Scheduler::take_up_filesystem(Entry& e) {
    const bool after_zeros = warmed_through_filesystem(e, e.state);
    if (!e.attached || e.job || (e.state != DiskState::skipped && !after_zeros) ||
        !e.match.matched || (m_config.auto_prefill == AutoPrefill::never && !e.requested))
        return false;
    std::string refused;
    for (auto& fs : m_host.filesystems_on(e.disk)) {
        if (!fs) {
            refused += (refused.empty() ? "" : "; ") + fs.error().message;
            continue;
        }
        e.kind = FilesystemJob{std::move(*fs), 0};
        // The block job's zeros may have warmed nothing: its checkpoint says nothing
        // of the free space.
        if (after_zeros)
            m_state.drop_checkpoint(e.identity);
        enter_ready(e);
        return true;
    }
    if (!refused.empty() && e.reason.find(refused) == std::string::npos)
        enter_skipped(e, e.reason + "; not warmed online: " + refused);
    return false;
}

// A block job that ended not proven warm, or found zero writes discarded (qcow2
// with detect-zeroes): the disk's filesystem, once mounted, is warmed through its
// free space, where the claim's probe can tell and the fill warms (docs/engine.md).
bool Scheduler::warmed_through_filesystem(const Entry& e, DiskState state) const {
    return !filesystem_of(e.kind) &&
           (state == DiskState::unproven || state == DiskState::not_warmable);
}

void Scheduler::mounts_changed() {
    for (auto& [id, e] : m_entries)
        take_up_filesystem(*e);
    schedule();
}

void Scheduler::set_boot_finished(bool finished) {
    const bool was = m_boot_finished;
    m_boot_finished = finished;
    if (!finished || was)
        return;
    for (auto& [id, e] : m_entries)
        if (e->attached && e->state == DiskState::waiting && !e->grace_watched)
            enter_ready(*e);
    schedule();
}

void Scheduler::on_detached(const DiskInfo& disk) {
    auto* e = find(disk_identity(disk));
    if (!e)
        return;
    e->attached = false;
    e->back.reset();
    const auto identity = e->identity;
    if (e->grace_watched && m_hooks.forget_grace)
        m_hooks.forget_grace(e->identity);
    e->grace_watched = false;
    if (e->job)
        stop_job(
            *e, {Stopping::Why::detach, "the disk was detached; it resumes when the disk returns"});
    else
        forget_detached(*e);
    // Last: a disk forgotten above is gone from disks() by now.
    if (m_hooks.changed)
        m_hooks.changed(DiskChange::removed, identity);
}

// A disk attached again while its old job was ending: judged now, as any attach.
void Scheduler::attach_back(Entry& e) {
    if (!e.back || m_shutting_down)
        return;
    const auto disk = *std::exchange(e.back, std::nullopt);
    on_attached(disk); // may replace `e` (another volume in its slot)
}

// A detached disk without a job: recorded ones stay known, the others are forgotten.
void Scheduler::forget_detached(Entry& e) {
    switch (e.state) {
    case DiskState::queued:
        enter_end(e, DiskState::detached, "detached while queued; resumes when it returns");
        break;
    case DiskState::discovered:
    case DiskState::skipped:
    case DiskState::waiting:
        if (!e.has_record) {
            log(false, e, "detached");
            const auto identity = e.identity;
            m_entries.erase(identity);
        }
        break;
    default:
        log(false, e, "detached (" + std::string(to_string(e.state)) + ")");
        break;
    }
}

std::optional<uint64_t> Scheduler::override_rate(const Entry& e) const {
    if (e.asked.rate_bytes_per_s)
        return e.asked.rate_bytes_per_s;
    for (const auto& o : m_config.rates)
        if (o.rule.matches(e.disk))
            return o.rate_bytes_per_s;
    return std::nullopt;
}

JobSpec Scheduler::spec_for(const Entry& e) const {
    JobSpec spec;
    spec.identity = e.identity;
    spec.path = e.disk.devnode;
    spec.disk = e.disk;
    spec.kind = e.kind;
    if (auto* fs = std::get_if<FilesystemJob>(&spec.kind))
        fs->reserve_bytes = fs->fs.size_bytes / 100 * m_config.filesystem_reserve_percent;
    spec.requested = e.requested;
    auto& o = spec.options;
    o.mode = e.asked.mode.value_or(m_config.mode);
    o.chunk_bytes = m_config.chunk_bytes;
    spec.chunk_explicit = m_config.chunk_set;
    o.backend_block_bytes = m_config.backend_block_bytes;
    spec.probe = m_config.probe;
    spec.probe_before = e.probe;
    spec.backend_block_auto = m_config.backend_block_auto;
    spec.strategy = m_config.strategy;
    spec.io_engine = m_config.io_engine;
    o.queue_depth = e.asked.queue_depth.value_or(m_config.queue_depth);
    o.idle_priority = m_config.idle_priority;
    o.checkpoint_path = m_state.checkpoint_path(e.identity);
    o.checkpoint_interval = m_config.checkpoint_interval;
    // The first share; rebalance() sets every running job's rate.
    o.rate_bytes_per_s =
        override_rate(e).value_or(m_config.total_rate_bytes_per_s / (running_jobs() + 1));
    return spec;
}

void Scheduler::schedule() {
    if (m_shutting_down || m_held)
        return;
    while (running_jobs() < m_config.max_parallel) {
        Entry* next = nullptr;
        for (auto& [id, e] : m_entries)
            if (e->attached && e->state == DiskState::queued && !e->job && !e->probing &&
                (!next ||
                 std::pair(!e->requested, e->order) < std::pair(!next->requested, next->order)))
                next = e.get();
        if (!next)
            break;
        auto job = m_host.start(spec_for(*next), [this] {
            if (m_hooks.wake)
                m_hooks.wake();
        });
        if (!job) {
            const bool was_filesystem = filesystem_of(std::exchange(next->kind, BlockJob{}));
            enter_skipped(*next, "not started: " + job.error().message);
            if (!was_filesystem)
                take_up_filesystem(*next);
            continue;
        }
        enter_running(*next, std::move(*job));
    }
    rebalance();
}

// Running jobs without a rate of their own share total_rate evenly; under
// pressure (adaptive mode) every rate is scaled down, to 1 byte/s when held.
void Scheduler::rebalance() {
    const bool pressed = m_pressure < 1;
    const uint64_t total = m_config.total_rate_bytes_per_s ? m_config.total_rate_bytes_per_s
                                                           : (pressed ? m_pressure_reference : 0);
    // Jobs with a deadline first: each the rate its bytes left need, within its own
    // rate or the total; the others share what is left of the total.
    uint64_t sharing = 0, paced = 0;
    const double now = wall_seconds();
    for (const auto& [id, e] : m_entries) {
        if (!e->job)
            continue;
        const auto own = override_rate(*e);
        if (e->deadline) {
            const auto progress = e->job->snapshot();
            if (progress.total_bytes)
                e->deadline->total_bytes = progress.total_bytes;
            const bool was_on_track = e->pace.on_track;
            e->pace = pace_deadline(*e->deadline, progress.done_bytes, now,
                                    own ? *own : m_config.total_rate_bytes_per_s);
            if (!own)
                paced += e->pace.rate_bytes_per_s;
            if (was_on_track && !e->pace.on_track)
                late(*e);
        } else if (!own) {
            ++sharing;
        }
    }
    const uint64_t left = total > paced ? total - paced : (total ? 1 : 0);
    for (const auto& [id, e] : m_entries) {
        if (!e->job)
            continue;
        const auto own = override_rate(*e);
        const uint64_t share = sharing ? std::max<uint64_t>(left / sharing, total ? 1 : 0) : 0;
        uint64_t rate = e->deadline ? e->pace.rate_bytes_per_s : own ? *own : share;
        if (pressed)
            rate = rate ? std::max<uint64_t>(
                              1, static_cast<uint64_t>(static_cast<double>(rate) * m_pressure))
                        : (m_pressure == 0 ? 1 : 0);
        e->job->command(RateCommand{rate, 0});
        // Fewer chunks in flight too: a job backed off queues less in the backend.
        const unsigned depth = e->asked.queue_depth.value_or(m_config.queue_depth);
        e->job->command(DepthCommand{std::max(
            1u, static_cast<unsigned>(std::lround(static_cast<double>(depth) * m_pressure)))});
    }
}

void Scheduler::pace_deadlines() {
    if (std::any_of(m_entries.begin(), m_entries.end(),
                    [](const auto& kv) { return kv.second->job && kv.second->deadline; }))
        rebalance();
}

// Its deadline can no longer be met at the rate allowed, or it fell behind (the
// neighbours' pressure, a slow backend): said now, not at the deadline.
void Scheduler::late(Entry& e) {
    const auto& p = e.pace;
    std::string why =
        !p.can_meet ? (p.needed_bytes_per_s ? "needs " + format_rate(static_cast<double>(
                                                             p.needed_bytes_per_s)) +
                                                  ", more than it may have"
                                            : "the deadline has passed")
                    : "behind by " + format_duration(std::chrono::seconds(static_cast<int64_t>(
                                         std::ceil(-p.margin_s))));
    log(true, e, "will miss its deadline of " + rfc3339(e.deadline->at_unix) + ": " + why);
    if (m_hooks.changed)
        m_hooks.changed(DiskChange::late, e.identity);
}

void Scheduler::set_pressure(double factor, uint64_t reference_bytes_per_s, std::string why) {
    m_pressure_why = std::move(why);
    if (factor == m_pressure && reference_bytes_per_s == m_pressure_reference)
        return;
    m_pressure = factor;
    m_pressure_reference = reference_bytes_per_s;
    rebalance();
}

void Scheduler::reap() {
    bool any = false;
    for (auto it = m_entries.begin(); it != m_entries.end();) {
        auto& e = *it->second;
        ++it;
        if (!e.job || !e.job->finished())
            continue;
        job_ended(e);
        attach_back(e);
        any = true;
    }
    if (any)
        schedule();
}

Result<void> Scheduler::start(const std::string& identity, const StartRequest& request) {
    auto* e = find(identity);
    if (!e)
        return refuse(Refusal::unknown_disk, "no disk " + identity);
    if (e->job || e->state == DiskState::warm)
        return {}; // one job per disk: starting it again returns it
    if (!e->attached)
        return refuse(Refusal::not_attached, identity + " is not attached");
    e->look = m_host.look(e->disk); // now, not as it was at the attach
    if (e->look.verdict == Verdict::refused)
        return refuse(Refusal::refused, identity + " may not be touched: " + e->look.reasons_text());
    if (request.queue_depth)
        if (const auto over = over_buffer_budget(m_config.max_parallel, *request.queue_depth,
                                                 m_config.chunk_bytes);
            !over.empty())
            return refuse(Refusal::over_budget,
                          "queue_depth " + std::to_string(*request.queue_depth) + ": " + over);
    // Both given: the sooner. Judged by the time asked for, before its rounding.
    std::optional<Deadline> deadline;
    uint64_t within_s = 0;
    if (request.within_s) {
        deadline = deadline_within(*request.within_s, e->disk.size_bytes);
        within_s = *request.within_s;
    }
    if (request.deadline_unix && (!deadline || *request.deadline_unix < deadline->at_unix)) {
        deadline = Deadline{now_unix(), *request.deadline_unix, e->disk.size_bytes};
        within_s = static_cast<uint64_t>(std::max<int64_t>(1, deadline->at_unix - now_unix()));
    }
    if (deadline) {
        const auto own = request.rate_bytes_per_s ? request.rate_bytes_per_s : override_rate(*e);
        if (auto fits = check_deadline(e->disk.size_bytes, within_s,
                                       own ? *own : m_config.total_rate_bytes_per_s,
                                       own ? "its own rate" : "the total rate");
            !fits)
            return fits.error();
    }
    e->requested = true;
    e->deadline.reset();
    e->pace = {};
    e->deadline = deadline;
    if (request.mode)
        e->asked.mode = request.mode;
    if (request.rate_bytes_per_s)
        e->asked.rate_bytes_per_s = request.rate_bytes_per_s;
    if (request.queue_depth)
        e->asked.queue_depth = request.queue_depth;
    if (e->grace_watched && m_hooks.forget_grace)
        m_hooks.forget_grace(e->identity);
    e->grace_watched = false;
    e->quiet_watched = false;
    if (e->state != DiskState::queued)
        e->kind = BlockJob{}; // asked for: the disk, not a filesystem's free space
    enter_ready(*e);
    schedule();
    return recorded(*e, "asked for");
}

Result<Scheduler::ProbeTicket> Scheduler::begin_probe(const std::string& identity) {
    auto* e = find(identity);
    if (!e)
        return refuse(Refusal::unknown_disk, "no disk " + identity);
    if (!e->attached)
        return refuse(Refusal::not_attached, identity + " is not attached");
    if (e->job || e->probing)
        return refuse(Refusal::refused, identity + (e->job ? " has a job running: probed when it is done"
                                                : " is being probed already"));
    e->look = m_host.look(e->disk);
    if (e->look.verdict == Verdict::refused)
        return refuse(Refusal::refused, identity + " may not be touched: " + e->look.reasons_text());
    e->probing = true;
    return ProbeTicket{e->disk, e->probe};
}

void Scheduler::end_probe(const std::string& identity, const Result<ProbeFigures>& figures) {
    auto* e = find(identity);
    if (!e)
        return;
    e->probing = false;
    if (figures) {
        e->probe = *figures;
        log(false, *e, figures->warm ? "probed again" : "probed");
        if (e->has_record)
            save(*e);
    } else {
        log(true, *e, "probe: " + figures.error().message);
    }
    schedule();
}

Result<void> Scheduler::pause(const std::string& identity) {
    auto* e = find(identity);
    if (!e)
        return refuse(Refusal::unknown_disk, "no disk " + identity);
    if (e->job) {
        e->job->command(PauseCommand{});
        enter_paused(*e, "paused on request");
        return recorded(*e, "paused");
    }
    if (e->state == DiskState::queued || e->state == DiskState::waiting ||
        e->state == DiskState::paused) {
        enter_paused(*e, "paused on request");
        return recorded(*e, "paused");
    }
    return refuse(Refusal::wrong_state, identity + " is " + std::string(to_string(e->state)) + ": nothing to pause");
}

Result<void> Scheduler::resume(const std::string& identity) {
    auto* e = find(identity);
    if (!e)
        return refuse(Refusal::unknown_disk, "no disk " + identity);
    if (e->state != DiskState::paused)
        return e->job ? Result<void>{}
                      : refuse(Refusal::wrong_state, identity + " is " + std::string(to_string(e->state)) +
                                           ": nothing to resume");
    if (e->job) {
        e->job->command(ResumeCommand{});
        set_state(*e, DiskState::running, "");
        return recorded(*e, "running again");
    }
    if (!e->attached)
        return refuse(Refusal::not_attached, identity + " is not attached");
    enter_ready(*e);
    schedule();
    return recorded(*e, "resumed");
}

Result<void> Scheduler::cancel(const std::string& identity) {
    auto* e = find(identity);
    if (!e)
        return refuse(Refusal::unknown_disk, "no disk " + identity);
    if (e->job) {
        stop_job(*e, {Stopping::Why::cancel, "cancelled on request"});
        save(*e); // before the answer, not once the job has ended
        return recorded(*e, "being cancelled");
    }
    if (is_finished(e->state))
        return refuse(Refusal::wrong_state, identity + " is " + std::string(to_string(e->state)) +
                                  " already: nothing to cancel");
    enter_end(*e, DiskState::cancelled, "cancelled on request");
    return recorded(*e, "cancelled");
}

Result<void> Scheduler::release(const std::string& identity) {
    auto* e = find(identity);
    if (!e)
        return refuse(Refusal::unknown_disk, "no disk " + identity);
    if (e->job) {
        stop_job(*e, {Stopping::Why::release, "released on request"});
        save(*e);
        return recorded(*e, "being released");
    }
    if (e->state == DiskState::queued || e->state == DiskState::waiting ||
        e->state == DiskState::paused) {
        enter_end(*e, DiskState::released, "released on request");
        return recorded(*e, "released");
    }
    return {}; // holding nothing: released already
}

Result<void> Scheduler::act(const std::string& identity, DiskAction action,
                            const StartRequest& start_request) {
    switch (action) {
    case DiskAction::start:
        return start(identity, start_request);
    case DiskAction::pause:
        return pause(identity);
    case DiskAction::resume:
        return resume(identity);
    case DiskAction::cancel:
        return cancel(identity);
    case DiskAction::release:
        return release(identity);
    }
    return refuse(Refusal::wrong_state, "unknown action");
}

void Scheduler::hold(const std::string& why) {
    if (m_held)
        return;
    m_held = true;
    for (auto& [id, e] : m_entries)
        if (e->job)
            stop_job(*e, {Stopping::Why::hold, why});
    for (auto& [id, e] : m_entries)
        if (e->job) {
            job_ended(*e);
            attach_back(*e);
        }
}

void Scheduler::release_hold() {
    if (!m_held)
        return;
    m_held = false;
    for (auto& [id, e] : m_entries)
        if (e->attached && e->state == DiskState::waiting && !e->grace_watched &&
            (m_boot_finished || e->requested))
            enter_queued(*e, ""); // in its old place: first again
    schedule();
}

std::string Scheduler::over_budget(const Config& config) const {
    unsigned depth = config.queue_depth; // or one a start asked for
    for (const auto& [id, e] : m_entries)
        depth = std::max(depth, e->asked.queue_depth.value_or(0));
    return over_buffer_budget(config.max_parallel, depth, config.chunk_bytes);
}

Result<void> Scheduler::change(const SettingsChange& c) {
    if (c.max_parallel) {
        Config changed = m_config;
        changed.max_parallel = *c.max_parallel;
        if (const auto over = over_budget(changed); !over.empty())
            return refuse(Refusal::over_budget,
                          "max_parallel " + std::to_string(*c.max_parallel) + ": " + over);
    }
    if (c.total_rate_bytes_per_s)
        set_total_rate(*c.total_rate_bytes_per_s);
    if (c.max_parallel)
        set_max_parallel(*c.max_parallel);
    if (c.auto_prefill)
        set_auto_prefill(*c.auto_prefill);
    return {};
}

void Scheduler::set_total_rate(uint64_t rate) {
    m_config.total_rate_bytes_per_s = rate;
    rebalance();
}

void Scheduler::set_max_parallel(unsigned max_parallel) {
    m_config.max_parallel = std::max(1u, max_parallel);
    schedule();
}

void Scheduler::set_auto_prefill(AutoPrefill policy) {
    m_config.auto_prefill = policy;
    for (auto& [id, e] : m_entries)
        if (e->attached && !e->job &&
            (e->state == DiskState::discovered || e->state == DiskState::skipped))
            decide(*e);
    schedule();
}

void Scheduler::config_changed() {
    for (auto& [id, e] : m_entries)
        if (e->attached && !e->job &&
            (e->state == DiskState::discovered || e->state == DiskState::skipped))
            decide(*e);
    schedule();
}

void Scheduler::shutdown() {
    m_shutting_down = true;
    for (auto& [id, e] : m_entries)
        if (e->job)
            stop_job(*e, {Stopping::Why::shutdown, "the daemon is stopping"});
    for (auto& [id, e] : m_entries)
        if (e->job)
            job_ended(*e);
}

std::vector<DiskView> Scheduler::disks() const {
    std::vector<DiskView> out;
    for (const auto& [id, e] : m_entries)
        out.push_back(*disk(id));
    return out;
}

std::optional<DiskView> Scheduler::disk(const std::string& identity) const {
    const auto* e = find(identity);
    if (!e)
        return std::nullopt;
    DiskView v;
    v.identity = e->identity;
    v.disk = e->disk;
    v.attached = e->attached;
    v.state = e->state;
    v.reason = e->reason;
    v.matched = e->match.matched;
    v.match_reason = e->match.reason;
    v.verdict = e->look.verdict;
    v.verdict_reasons = e->look.reasons;
    v.facts = e->look.facts;
    v.requested = e->requested;
    v.first_seen_unix = e->first_seen_unix;
    v.state_since_unix = e->state_since_unix;
    v.job_ends = e->job_ends;
    v.deadline = e->deadline;
    v.pace = e->pace;
    v.progress = e->job ? e->job->snapshot() : e->last;
    // A job asked for holds the disk to itself once it runs (DiskJobHost::start).
    v.exclusive = e->requested && (e->job || e->state == DiskState::queued);
    v.probe = e->job ? e->job->probe() : e->probe;
    v.kind = e->kind;
    v.fstrim_timer_active = filesystem_of(v.kind) && fstrim_timer_enabled();
    if (e->job && m_pressure < 1)
        v.adaptive = m_pressure_why;
    if (e->job && v.progress.status == JobStatus::paused && v.state == DiskState::running) {
        v.state = DiskState::paused; // paused by the job itself: the backend is full
        v.reason = v.progress.reason;
    }
    return v;
}

bool Scheduler::busy() const {
    return running_jobs() > 0;
}

std::string Scheduler::status_line() const {
    std::string warming;
    unsigned running = 0, queued = 0, waiting = 0, warm = 0, not_warm = 0;
    for (const auto& [id, e] : m_entries) {
        if (e->job) {
            if (running++ == 0) {
                const auto p = e->job->snapshot();
                char pct[16];
                std::snprintf(pct, sizeof pct, "%.0f%%", p.ratio() * 100);
                warming = "warming " + e->disk.name + " " + pct + " at " +
                          format_rate(p.rate_10s_bytes_per_s);
            }
        } else if (e->state == DiskState::queued) {
            ++queued;
        } else if (e->state == DiskState::waiting) {
            ++waiting;
        } else if (e->state == DiskState::warm && e->attached) {
            ++warm;
        } else if (is_finished(e->state) && e->attached) {
            ++not_warm;
        }
    }
    std::string line = running ? warming : "idle";
    const auto add = [&](unsigned n, const char* what) {
        if (n)
            line += ", " + std::to_string(n) + " " + what;
    };
    if (running > 1)
        add(running - 1, "more running");
    add(queued, "queued");
    add(waiting, m_boot_finished ? "waiting" : "waiting for the boot to finish");
    add(warm, "warm");
    add(not_warm, "not proven warm");
    return line;
}

} // namespace prewarmd
