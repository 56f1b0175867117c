#include <doctest/doctest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "base/atomic_file.hh"
#include "control/refusal.hh"
#include "discovery/identity.hh"
#include "scheduler/scheduler.hh"
#include "temp_dir.hh"
#include "udev_fixture.hh"

using namespace prewarmd;

namespace {

// A job that runs until the test ends it; it notes its rate and commands.
class FakeJob final : public RunningJob {
public:
    explicit FakeJob(std::function<void()> on_finished) : m_on_finished(std::move(on_finished)) {}
    ProgressSnapshot snapshot() const override {
        std::lock_guard lock(m_mutex);
        return m_snapshot;
    }
    void command(JobCommand command) override {
        if (const auto* stop = std::get_if<StopCommand>(&command)) {
            finish(stop->as, stop->reason);
            return;
        }
        std::lock_guard lock(m_mutex);
        if (std::holds_alternative<PauseCommand>(command))
            m_snapshot.status = JobStatus::paused;
        else if (std::holds_alternative<ResumeCommand>(command))
            m_snapshot.status = JobStatus::running;
        else if (const auto* r = std::get_if<RateCommand>(&command))
            rate = r->rate_bytes_per_s;
        else if (const auto* d = std::get_if<DepthCommand>(&command))
            depth = d->chunks_in_flight;
    }
    bool finished() const override { return m_finished; }
    ProbeFigures probe() const override { return figures; }
    ProgressSnapshot wait() override { return snapshot(); }

    void finish(JobStatus as, std::string reason = {}) {
        {
            std::lock_guard lock(m_mutex);
            m_snapshot.status = as;
            m_snapshot.reason = std::move(reason);
        }
        m_finished = true;
        m_on_finished();
    }
    std::atomic<uint64_t> rate{0};
    std::atomic<unsigned> depth{0};
    ProbeFigures figures; // what its probes found, once it ends

private:
    std::function<void()> m_on_finished;
    mutable std::mutex m_mutex;
    ProgressSnapshot m_snapshot{JobStatus::running};
    std::atomic<bool> m_finished{false};
};

class FakeHost final : public JobHost {
public:
    Classification look(const DiskInfo& disk) override {
        ++looks[disk.name];
        Classification c;
        if (locked.count(disk.name)) {
            c.locked = true;
            c.reasons.push_back("its block device lock is held by another program");
            return c;
        }
        c.verdict = verdicts.count(disk.name) ? verdicts[disk.name] : Verdict::eligible;
        c.reasons.push_back(c.verdict == Verdict::eligible ? "blank" : "has ext4 filesystem");
        return c;
    }
    ProtectedDisks protected_disks() override { return {}; }
    std::vector<Result<FilesystemTarget>> filesystems_on(const DiskInfo& disk) override {
        const auto it = mounted.find(disk.name);
        return it == mounted.end() ? std::vector<Result<FilesystemTarget>>() : it->second;
    }
    Result<uint64_t> discarded_bytes(const DiskInfo& disk) override {
        if (!discards.count(disk.name))
            return Error{-ENODATA, "/sys/dev/block/202:32/stat: the kernel counts no discards here"};
        return discards[disk.name];
    }
    Result<std::unique_ptr<RunningJob>> start(const JobSpec& spec,
                                              std::function<void()> on_finished) override {
        REQUIRE(spec.disk);
        const auto& disk = *spec.disk;
        if (refuse_start.count(disk.name))
            return Error{-EBUSY, "refused: mounted at /mnt"};
        auto job = std::make_unique<FakeJob>(std::move(on_finished));
        jobs[disk.name] = job.get();
        specs[disk.name] = spec;
        return std::unique_ptr<RunningJob>(std::move(job));
    }
    std::map<std::string, Verdict> verdicts;
    std::set<std::string> locked; // another program holds the disk's lock
    std::map<std::string, std::vector<Result<FilesystemTarget>>> mounted;
    std::map<std::string, int> looks; // opens of the disk to classify it
    std::set<std::string> refuse_start;
    std::map<std::string, uint64_t> discards; // bytes since boot; none: unreadable
    std::map<std::string, FakeJob*> jobs;
    std::map<std::string, JobSpec> specs;
};

DiskInfo xen_disk(const std::string& name, uint64_t vdev) {
    auto d = load_udev_fixture("xen-xvdb-blank.txt");
    d.name = name;
    d.devnode = "/dev/" + name;
    d.devpath = "/devices/vbd-" + std::to_string(vdev) + "/block/" + name;
    d.parent_attributes["nodename"] = "device/vbd/" + std::to_string(vdev);
    return d;
}

struct Harness {
    explicit Harness(const std::string& extra_config = "") {
        auto parsed = parse_config("[prefill]\ntotal_rate = \"100MiB/s\"\n" + extra_config, "test");
        REQUIRE_MESSAGE(parsed.ok(), (parsed.ok() ? "" : parsed.error().message));
        config = *parsed;
        state.emplace(std::move(*StateDir::open(dir.file("state"))));
        make();
    }
    void make() {
        Scheduler::Hooks hooks;
        hooks.watch_grace = [this](const std::string& id, const DiskInfo&) { grace.insert(id); };
        hooks.forget_grace = [this](const std::string& id) { grace.erase(id); };
        hooks.watch_quiet = [this](const std::string& id, const DiskInfo&) { grace.insert(id); };
        hooks.wake = [] {};
        hooks.log = [this](bool, const std::string& line) { log.push_back(line); };
        hooks.changed = [this](DiskChange change, const std::string&) { changes.push_back(change); };
        scheduler.emplace(config, *state, host, std::move(hooks));
    }
    // Every test: no change the state table forbids. The scheduler goes first: its
    // shutdown logs into `log`.
    ~Harness() {
        CHECK(scheduler->illegal_transitions() == 0);
        scheduler.reset();
    }
    DiskState state_of(const DiskInfo& d) { return scheduler->disk(disk_identity(d))->state; }
    std::string reason_of(const DiskInfo& d) { return scheduler->disk(disk_identity(d))->reason; }
    void quiet(const DiskInfo& d) {
        scheduler->on_grace(disk_identity(d), false, "quiet for 30 s");
    }
    // Attached and quiet for the grace: its job runs.
    void run(const DiskInfo& d) {
        scheduler->on_attached(d);
        if (state_of(d) == DiskState::waiting)
            quiet(d);
        REQUIRE(state_of(d) == DiskState::running);
    }
    // Its job run and ended warm.
    void warm_up(const DiskInfo& d) {
        run(d);
        host.jobs[d.name]->finish(JobStatus::warm);
        scheduler->reap();
        REQUIRE(state_of(d) == DiskState::warm);
        host.jobs.clear();
    }

    TempDir dir;
    Config config;
    std::optional<StateDir> state;
    FakeHost host;
    std::optional<Scheduler> scheduler;
    std::set<std::string> grace;
    std::vector<std::string> log;
    std::vector<DiskChange> changes;
};

FilesystemTarget ext4_at(const std::string& mount_point, const std::string& device) {
    FilesystemTarget t;
    t.mount_point = mount_point;
    t.fstype = "ext4";
    t.device = device;
    t.disk = "xvdc";
    t.size_bytes = 10ULL << 30;
    return t;
}

} // namespace

TEST_CASE("a blank disk: attach grace, queued, running, warm, recorded") {
    Harness h;
    const auto xvdb = xen_disk("xvdb", 51728);
    h.scheduler->on_attached(xvdb);
    CHECK(h.state_of(xvdb) == DiskState::waiting);
    CHECK(h.grace.count(disk_identity(xvdb)));
    CHECK(h.host.jobs.empty());
    h.quiet(xvdb);
    CHECK(h.state_of(xvdb) == DiskState::running);
    REQUIRE(h.host.jobs.count("xvdb"));
    CHECK(h.host.specs["xvdb"].options.checkpoint_path.find("/checkpoints/xen-51728-") !=
          std::string::npos);
    h.host.jobs["xvdb"]->finish(JobStatus::warm);
    h.scheduler->reap();
    CHECK(h.state_of(xvdb) == DiskState::warm);
    CHECK(h.state->load().records.size() == 1);
    CHECK(std::any_of(h.log.begin(), h.log.end(), [](const std::string& l) {
        return l.find("xen-51728-2147483648 (xvdb): running -> warm") != std::string::npos;
    }));
}

TEST_CASE("a blank disk not proven warm: its filesystem is warmed too") {
    Harness h;
    const auto xvdc = xen_disk("xvdc", 51744);
    h.scheduler->on_attached(xvdc);
    h.quiet(xvdc);
    REQUIRE(h.host.jobs.count("xvdc"));
    ColdProbe probe;
    probe.strides = 16; // of the whole disk
    probe.zero_writes = ZeroWrites::unknown;
    h.host.jobs["xvdc"]->figures.cold = probe;
    h.host.jobs["xvdc"]->finish(JobStatus::unproven,
                                "written, not proven warm: zero writes unknown");
    h.scheduler->reap();
    CHECK(h.state_of(xvdc) == DiskState::unproven);
    CHECK(h.reason_of(xvdc) == "written, not proven warm: zero writes unknown; a filesystem of it "
                               "is warmed once mounted");
    CHECK(std::any_of(h.log.begin(), h.log.end(), [](const std::string& l) {
        return l.find("unproven: 0 B written") != std::string::npos;
    }));

    // Formatted and mounted: a filesystem job, from nothing (the block job's
    // checkpoint gone).
    const auto checkpoint = h.state->checkpoint_path(disk_identity(xvdc));
    REQUIRE(write_file_atomically(checkpoint, "{}\n", 0644));
    h.host.mounted["xvdc"] = {ext4_at("/data", "xvdc1")};
    h.scheduler->mounts_changed();
    CHECK(h.state_of(xvdc) == DiskState::running);
    REQUIRE(std::get_if<FilesystemJob>(&h.host.specs["xvdc"].kind));
    CHECK_FALSE(std::filesystem::exists(checkpoint));
    h.host.jobs["xvdc"]->finish(JobStatus::warm);
    h.scheduler->reap();
    CHECK(h.state_of(xvdc) == DiskState::warm);
    h.scheduler->mounts_changed(); // warm through its filesystem: stays warm
    CHECK(h.state_of(xvdc) == DiskState::warm);

    // A block job that ended warm: its filesystem is not warmed again.
    Harness k;
    const auto xvdd = xen_disk("xvdd", 51760);
    k.scheduler->on_attached(xvdd);
    k.quiet(xvdd);
    probe.zero_writes = ZeroWrites::kept;
    k.host.jobs["xvdd"]->figures.cold = probe;
    k.host.jobs["xvdd"]->finish(JobStatus::warm);
    k.scheduler->reap();
    k.host.mounted["xvdd"] = {ext4_at("/data", "xvdd1")};
    k.scheduler->mounts_changed();
    CHECK(k.state_of(xvdd) == DiskState::warm);
}

TEST_CASE("disks holding data, unmatched or busy in the grace are skipped with the reason") {
    Harness h;
    const auto ext4 = xen_disk("xvdc", 51744);
    h.host.verdicts["xvdc"] = Verdict::needs_request;
    h.scheduler->on_attached(ext4);
    CHECK(h.state_of(ext4) == DiskState::skipped);
    CHECK(h.reason_of(ext4) == "holds data, warmed only when asked: has ext4 filesystem");

    auto loop = load_udev_fixture("loop3.txt");
    h.scheduler->on_attached(loop);
    CHECK(h.state_of(loop) == DiskState::skipped);
    CHECK(h.reason_of(loop).find("a loop device") != std::string::npos);
    CHECK_MESSAGE(h.host.looks.count("loop3") == 0, "a disk not considered is not opened");

    const auto busy = xen_disk("xvdd", 51760);
    h.scheduler->on_attached(busy);
    h.scheduler->on_grace(disk_identity(busy), true, "opened by mkfs.ext4 (pid 812)");
    CHECK(h.state_of(busy) == DiskState::skipped);
    CHECK(h.reason_of(busy) == "in use during the attach grace: opened by mkfs.ext4 (pid 812)");
    CHECK(h.host.jobs.empty());
}

TEST_CASE("a disk whose lock another program holds is judged again once quiet, never skipped") {
    Harness h;
    const auto xvdb = xen_disk("xvdb", 51728);
    h.host.locked.insert("xvdb");
    h.scheduler->on_attached(xvdb);
    CHECK(h.state_of(xvdb) == DiskState::waiting);
    CHECK(
        h.reason_of(xvdb).find("lock is held by another program; judged once the disk is quiet") !=
        std::string::npos);
    CHECK(h.grace.count(disk_identity(xvdb)));
    h.quiet(xvdb); // still held: waits again
    CHECK(h.state_of(xvdb) == DiskState::waiting);
    CHECK(h.host.jobs.empty());
    h.host.locked.erase("xvdb");
    h.quiet(xvdb);
    CHECK(h.host.jobs.count("xvdb"));
}

TEST_CASE("a disk left to its users is warmed through its filesystem once mounted") {
    Harness h("filesystem_reserve = 10\n");
    const auto xvdc = xen_disk("xvdc", 51744);
    h.host.verdicts["xvdc"] = Verdict::needs_request;
    h.scheduler->on_attached(xvdc);
    CHECK(h.state_of(xvdc) == DiskState::skipped);
    CHECK(h.host.jobs.empty());

    // Unsupported: said, and nothing starts.
    h.host.mounted["xvdc"] = {Error{-EINVAL, "/srv: btrfs is not supported yet"}};
    h.scheduler->mounts_changed();
    CHECK(h.state_of(xvdc) == DiskState::skipped);
    CHECK(h.reason_of(xvdc).find("not warmed online: /srv: btrfs is not supported yet") !=
          std::string::npos);

    h.host.mounted["xvdc"] = {ext4_at("/data", "xvdc1")};
    h.scheduler->mounts_changed();
    CHECK(h.state_of(xvdc) == DiskState::running);
    REQUIRE(h.host.specs.count("xvdc"));
    const auto* job = std::get_if<FilesystemJob>(&h.host.specs["xvdc"].kind);
    REQUIRE(job);
    CHECK(job->fs.mount_point == "/data");
    CHECK(job->reserve_bytes == (10ULL << 30) / 100 * 10);
    CHECK(h.host.specs["xvdc"].path == "/dev/xvdc");
    const auto view = h.scheduler->disk(disk_identity(xvdc));
    REQUIRE(filesystem_of(view->kind));
    CHECK(filesystem_of(view->kind)->device == "xvdc1");

    // Unmounted mid-job: the job steps aside; the disk waits for the next mount.
    h.host.mounted.erase("xvdc");
    h.host.jobs["xvdc"]->finish(JobStatus::stepped_aside, "the filesystem at /data was unmounted");
    h.scheduler->reap();
    CHECK(h.state_of(xvdc) == DiskState::skipped);
    CHECK(h.reason_of(xvdc) == "its filesystem job stopped: the filesystem at /data was unmounted");
    CHECK_FALSE(filesystem_of(h.scheduler->disk(disk_identity(xvdc))->kind));

    h.host.mounted["xvdc"] = {ext4_at("/data", "xvdc1")};
    h.scheduler->mounts_changed();
    CHECK(h.state_of(xvdc) == DiskState::running);
    h.host.jobs["xvdc"]->finish(JobStatus::warm);
    h.scheduler->reap();
    CHECK(h.state_of(xvdc) == DiskState::warm);
    h.scheduler->mounts_changed(); // warm stays warm
    CHECK(h.state_of(xvdc) == DiskState::warm);
}

TEST_CASE("a warm disk given back by discards is judged afresh and warmed again") {
    Harness h;
    const auto xvdb = xen_disk("xvdb", 51728); // 2 GiB
    h.host.discards["xvdb"] = 5 << 20;         // before the job: not its business
    h.warm_up(xvdb);
    REQUIRE(h.scheduler->next_discard_check());

    // Under 1% of the disk since: a swap's or a stray blkdiscard's, left alone.
    h.host.discards["xvdb"] += 20 << 20;
    h.scheduler->check_discards();
    CHECK(h.state_of(xvdb) == DiskState::warm);

    // An fstrim of unmounted space, say: warmed again after the attach grace, and
    // said (the webhooks' warm_again) before the state changes.
    h.host.discards["xvdb"] += 1ULL << 30;
    h.changes.clear();
    h.scheduler->check_discards();
    CHECK(h.state_of(xvdb) == DiskState::waiting);
    REQUIRE(h.changes.size() >= 2);
    CHECK(h.changes[0] == DiskChange::warm_again);
    CHECK(h.changes[1] == DiskChange::state);
    CHECK(std::any_of(h.log.begin(), h.log.end(), [](const std::string& l) {
        return l.find("1.02 GiB discarded since it was warm (fstrim, mkfs, blkdiscard): warmed "
                      "again") != std::string::npos;
    }));
    CHECK_FALSE(h.scheduler->next_discard_check()); // nothing warm to watch
    h.quiet(xvdb);
    CHECK(h.state_of(xvdb) == DiskState::running);
    CHECK(h.host.jobs.count("xvdb"));
}

TEST_CASE("a warm filesystem trimmed is warmed again through its free space") {
    Harness h;
    const auto xvdc = xen_disk("xvdc", 51744);
    h.host.verdicts["xvdc"] = Verdict::needs_request;
    h.host.mounted["xvdc"] = {ext4_at("/data", "xvdc")};
    h.host.discards["xvdc"] = 0;
    h.warm_up(xvdc);

    h.host.discards["xvdc"] = 1ULL << 30; // fstrim /data
    h.scheduler->check_discards();
    CHECK(h.state_of(xvdc) == DiskState::running);
    REQUIRE(h.host.specs.count("xvdc"));
    CHECK(std::get_if<FilesystemJob>(&h.host.specs["xvdc"].kind));
}

TEST_CASE("discards that cannot be counted are said once, and the disk stays warm") {
    Harness h;
    const auto xvdb = xen_disk("xvdb", 51728);
    h.warm_up(xvdb);
    CHECK_FALSE(h.scheduler->next_discard_check());
    CHECK(std::count_if(h.log.begin(), h.log.end(), [](const std::string& l) {
              return l.find("discards not watched: /sys/dev/block/202:32/stat: the kernel counts "
                            "no discards here (an fstrim or mkfs would make it cold unseen)") !=
                     std::string::npos;
          }) == 1);
}

TEST_CASE("filesystems: auto_prefill never, disks not considered and busy starts") {
    Harness h("auto_prefill = \"never\"\n");
    const auto xvdc = xen_disk("xvdc", 51744);
    h.host.verdicts["xvdc"] = Verdict::needs_request;
    h.host.mounted["xvdc"] = {ext4_at("/data", "xvdc1")};
    h.scheduler->on_attached(xvdc);
    h.scheduler->mounts_changed();
    CHECK(h.state_of(xvdc) == DiskState::skipped);
    CHECK(h.host.jobs.empty());

    Harness b;
    auto loop = load_udev_fixture("loop3.txt");
    b.host.mounted["loop3"] = {ext4_at("/data", "loop3")};
    b.scheduler->on_attached(loop);
    b.scheduler->mounts_changed();
    CHECK(b.state_of(loop) == DiskState::skipped);
    CHECK(b.host.jobs.empty());

    // Formatted and mounted before the daemon saw it: a filesystem job at once;
    // one that cannot start is skipped with the reason, and not retried in a loop.
    Harness c;
    c.host.verdicts["xvdc"] = Verdict::refused;
    c.host.mounted["xvdc"] = {ext4_at("/data", "xvdc1")};
    c.host.refuse_start.insert("xvdc");
    c.scheduler->on_attached(xvdc);
    CHECK(c.state_of(xvdc) == DiskState::skipped);
    CHECK(c.reason_of(xvdc) == "not started: refused: mounted at /mnt");
}

TEST_CASE("at most max_parallel jobs; the rest queue in order, asked-for jobs first") {
    Harness h("max_parallel = 2\n");
    std::vector<DiskInfo> disks;
    for (unsigned i = 0; i < 4; ++i) {
        disks.push_back(xen_disk("xvd" + std::string(1, char('b' + i)), 51728 + 16 * i));
        h.scheduler->on_attached(disks.back());
        h.quiet(disks.back());
    }
    CHECK(h.host.jobs.size() == 2);
    CHECK(h.state_of(disks[2]) == DiskState::queued);
    // Asked for: goes before xvdd, which became ready earlier.
    const auto asked = xen_disk("xvdf", 51792);
    h.scheduler->on_attached(asked);
    REQUIRE(h.scheduler->start(disk_identity(asked), {}).ok());
    CHECK(h.state_of(asked) == DiskState::queued);
    h.host.jobs["xvdb"]->finish(JobStatus::warm);
    h.scheduler->reap();
    CHECK(h.host.jobs.count("xvdf"));
    CHECK_FALSE(h.host.jobs.count("xvdd"));
    h.host.jobs["xvdc"]->finish(JobStatus::warm);
    h.scheduler->reap();
    CHECK(h.host.jobs.count("xvdd"));
}

TEST_CASE("a setting or a start whose buffers would exceed the budget is refused, nothing changed") {
    Harness h("max_parallel = 2\n"); // 2 x 8 x 4 MiB
    SettingsChange more;
    more.max_parallel = 16;
    more.total_rate_bytes_per_s = 1;
    const auto refused = h.scheduler->change(more);
    REQUIRE_FALSE(refused.ok());
    CHECK(refusal_of(refused.error()) == Refusal::over_budget);
    CHECK(refused.error().message ==
          "max_parallel 16: 16 jobs x 8 chunks x 4.00 MiB = 512.0 MiB of buffers, over the 256.0 MiB budget");
    CHECK(h.scheduler->config().max_parallel == 2);
    CHECK(h.scheduler->config().total_rate_bytes_per_s != 1);
    more.max_parallel = 8;
    CHECK(h.scheduler->change(more).ok());
    CHECK(h.scheduler->config().max_parallel == 8);

    const auto disk = xen_disk("xvdb", 51728);
    h.scheduler->on_attached(disk);
    StartRequest deep;
    deep.queue_depth = 16; // 8 x 16 x 4 MiB
    const auto start = h.scheduler->start(disk_identity(disk), deep);
    REQUIRE_FALSE(start.ok());
    CHECK(refusal_of(start.error()) == Refusal::over_budget);
    CHECK_FALSE(h.host.jobs.count("xvdb"));
    SettingsChange fewer;
    fewer.max_parallel = 4;
    REQUIRE(h.scheduler->change(fewer).ok());
    REQUIRE(h.scheduler->start(disk_identity(disk), deep).ok()); // 4 x 16 x 4 MiB
    // That disk may run at depth 16: more jobs at once would exceed the budget, and
    // so would a file a reload brings that fits alone.
    more.max_parallel = 5;
    CHECK(refusal_of(h.scheduler->change(more).error()) == Refusal::over_budget);
    Config reloaded = h.scheduler->config();
    reloaded.max_parallel = 8;
    CHECK(over_buffer_budget(reloaded.max_parallel, reloaded.queue_depth, reloaded.chunk_bytes)
              .empty());
    CHECK(h.scheduler->over_budget(reloaded) ==
          "8 jobs x 16 chunks x 4.00 MiB = 512.0 MiB of buffers, over the 256.0 MiB budget");
}

TEST_CASE("an answer is true to the record: a command whose record cannot be saved says so") {
    Harness h;
    const auto xvdb = xen_disk("xvdb", 51728);
    const auto id = disk_identity(xvdb);
    h.run(xvdb);
    const auto jobs = h.state->path() + "/jobs";
    std::filesystem::rename(jobs, jobs + ".away"); // no record can be written now
    const auto not_recorded = [](const Result<void>& r) {
        return !r.ok() && refusal_of(r.error()) == Refusal::not_recorded;
    };
    CHECK(not_recorded(h.scheduler->pause(id)));
    CHECK(h.state_of(xvdb) == DiskState::paused); // in force all the same
    CHECK(not_recorded(h.scheduler->resume(id)));
    CHECK(h.state_of(xvdb) == DiskState::running);
    const auto cancel = h.scheduler->cancel(id);
    REQUIRE(not_recorded(cancel));
    CHECK(cancel.error().message.find("is being cancelled, but its record could not be saved") !=
          std::string::npos);
    // Room again: the record says cancelled while the job is still ending (not
    // reaped), so that a restart meanwhile does not take it up.
    std::filesystem::rename(jobs + ".away", jobs);
    h.scheduler->retry_saves();
    CHECK(h.state_of(xvdb) == DiskState::running);
    auto records = h.state->load().records;
    REQUIRE(records.size() == 1);
    CHECK(records[0].state == "cancelled");
    h.scheduler->reap();
    CHECK(h.state_of(xvdb) == DiskState::cancelled);
    CHECK(h.state->load().records[0].state == "cancelled");
}

TEST_CASE("a running job's cancel and release are recorded before the answer") {
    Harness h("max_parallel = 2\n");
    const auto xvdb = xen_disk("xvdb", 51728), xvdc = xen_disk("xvdc", 51744);
    h.run(xvdb);
    h.run(xvdc);
    REQUIRE(h.scheduler->cancel(disk_identity(xvdb)).ok());
    REQUIRE(h.scheduler->release(disk_identity(xvdc)).ok());
    std::map<std::string, std::string> recorded;
    for (const auto& r : h.state->load().records)
        recorded[r.name] = r.state;
    CHECK(recorded["xvdb"] == "cancelled");
    CHECK(recorded["xvdc"] == "released");
    CHECK(h.state_of(xvdb) == DiskState::running); // until the job's end is reaped
    h.scheduler->reap();
    CHECK(h.state_of(xvdb) == DiskState::cancelled);
    CHECK(h.state_of(xvdc) == DiskState::released);
}

TEST_CASE("running jobs share the total rate; a disk's own rate is its own") {
    Harness h("max_parallel = 3\n[rates]\n\"name:xvdd\" = \"10MiB/s\"\n");
    for (const auto& [name, vdev] : {std::pair{"xvdb", 51728}, {"xvdc", 51744}, {"xvdd", 51760}}) {
        h.scheduler->on_attached(xen_disk(name, static_cast<uint64_t>(vdev)));
        h.quiet(xen_disk(name, static_cast<uint64_t>(vdev)));
    }
    const uint64_t MiB = 1 << 20;
    CHECK(h.host.jobs["xvdb"]->rate == 50 * MiB);
    CHECK(h.host.jobs["xvdc"]->rate == 50 * MiB);
    CHECK(h.host.jobs["xvdd"]->rate == 10 * MiB);
    h.scheduler->set_total_rate(200 * MiB);
    CHECK(h.host.jobs["xvdb"]->rate == 100 * MiB);
    h.host.jobs["xvdc"]->finish(JobStatus::warm);
    h.scheduler->reap();
    CHECK(h.host.jobs["xvdb"]->rate == 200 * MiB);
}

TEST_CASE("pause, resume, cancel and release by disk id") {
    Harness h("max_parallel = 2\n");
    const auto a = xen_disk("xvdb", 51728), b = xen_disk("xvdc", 51744);
    for (const auto& d : {a, b}) {
        h.scheduler->on_attached(d);
        h.quiet(d);
    }
    const auto ida = disk_identity(a), idb = disk_identity(b);
    REQUIRE(h.scheduler->pause(ida).ok());
    CHECK(h.state_of(a) == DiskState::paused);
    CHECK(h.host.jobs["xvdb"]->snapshot().status == JobStatus::paused);
    REQUIRE(h.scheduler->resume(ida).ok());
    CHECK(h.state_of(a) == DiskState::running);

    REQUIRE(h.scheduler->release(idb).ok());
    CHECK(h.host.jobs["xvdc"]->finished());
    h.scheduler->reap();
    CHECK(h.state_of(b) == DiskState::released);
    CHECK(h.reason_of(b) == "released on request");

    REQUIRE(h.scheduler->cancel(ida).ok());
    h.scheduler->reap();
    CHECK(h.state_of(a) == DiskState::cancelled);

    CHECK(h.scheduler->pause("nonesuch").error().err == -ENOENT);
    CHECK(h.scheduler->resume(ida).error().err == -EINVAL);
    // Started again on request: one job, then starting it again returns it.
    REQUIRE(h.scheduler->start(ida, {}).ok());
    CHECK(h.state_of(a) == DiskState::running);
    const auto* job = h.host.jobs["xvdb"];
    REQUIRE(h.scheduler->start(ida, {}).ok());
    CHECK(h.host.jobs["xvdb"] == job);
}

TEST_CASE("a disk holding data is warmed when asked; a refused one is not") {
    Harness h;
    const auto ext4 = xen_disk("xvdc", 51744);
    h.host.verdicts["xvdc"] = Verdict::needs_request;
    h.scheduler->on_attached(ext4);
    REQUIRE(h.scheduler->start(disk_identity(ext4), {Mode::rewrite, 7, {}}).ok());
    CHECK(h.state_of(ext4) == DiskState::running);
    CHECK(h.host.specs["xvdc"].requested);
    CHECK(h.host.specs["xvdc"].options.mode == Mode::rewrite);
    CHECK(h.host.jobs["xvdc"]->rate == 7);

    const auto mounted = xen_disk("xvdd", 51760);
    h.host.verdicts["xvdd"] = Verdict::refused;
    h.scheduler->on_attached(mounted);
    const auto r = h.scheduler->start(disk_identity(mounted), {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().err == -EBUSY);

    // Judged when asked, not as at the attach: its user has gone since.
    h.host.verdicts["xvdd"] = Verdict::eligible;
    REQUIRE(h.scheduler->start(disk_identity(mounted), {}).ok());
    CHECK(h.state_of(mounted) == DiskState::queued); // behind xvdc: max_parallel is 1
}

TEST_CASE("the claim can still refuse: the job is skipped with the reason") {
    Harness h;
    const auto d = xen_disk("xvdb", 51728);
    h.host.refuse_start.insert("xvdb");
    h.scheduler->on_attached(d);
    h.quiet(d);
    CHECK(h.state_of(d) == DiskState::skipped);
    CHECK(h.reason_of(d) == "not started: refused: mounted at /mnt");
}

TEST_CASE("a disk detached mid-run is detached, and resumes when it returns") {
    Harness h;
    const auto d = xen_disk("xvdb", 51728);
    h.scheduler->on_attached(d);
    h.quiet(d);
    h.scheduler->on_detached(d);
    h.scheduler->reap();
    CHECK(h.state_of(d) == DiskState::detached);
    CHECK_FALSE(h.scheduler->disk(disk_identity(d))->attached);
    h.host.jobs.clear();
    h.scheduler->on_attached(d); // back: judged afresh, and the grace first
    CHECK(h.state_of(d) == DiskState::waiting);
    CHECK(h.host.jobs.empty());
    h.quiet(d);
    CHECK(h.state_of(d) == DiskState::running);
    CHECK(h.host.jobs.count("xvdb"));
}

TEST_CASE("what comes back in a detached disk's place is judged afresh: its job is not inherited") {
    Harness h;
    const auto d = xen_disk("xvdb", 51728);
    h.scheduler->on_attached(d);
    h.quiet(d);
    h.scheduler->on_detached(d);
    h.scheduler->reap();
    h.host.jobs.clear();
    SUBCASE("a volume holding a filesystem now") {
        h.host.verdicts["xvdb"] = Verdict::needs_request;
        h.scheduler->on_attached(d);
        CHECK(h.state_of(d) == DiskState::skipped);
        CHECK(h.reason_of(d).find("attached again, holds data now") != std::string::npos);
    }
    SUBCASE("a volume that cloud-init formats during the grace") {
        h.scheduler->on_attached(d);
        h.scheduler->on_grace(disk_identity(d), true, "opened by mkfs.ext4 (pid 812)");
        CHECK(h.state_of(d) == DiskState::skipped);
    }
    CHECK(h.host.jobs.empty());
}

namespace {

// xvdb, the volume a.raw, its job asked for (auto_prefill never) and its checkpoint
// written, then detached: the job told to stop, not yet reaped. The checkpoint's path.
std::string asked_then_detached(Harness& h, const DiskInfo& first) {
    h.scheduler->on_attached(first);
    REQUIRE(h.scheduler->start(disk_identity(first), {}).ok());
    REQUIRE(h.host.jobs.count("xvdb"));
    const auto checkpoint = h.host.specs["xvdb"].options.checkpoint_path;
    std::ofstream(checkpoint) << "progress of a.raw";
    h.scheduler->on_detached(first);
    return checkpoint;
}

DiskInfo volume_a() {
    auto first = xen_disk("xvdb", 51728);
    first.volume = "params=/var/lib/xen/a.raw";
    return first;
}

} // namespace

TEST_CASE("attached again before its old job is reaped: judged once it is, volumes compared") {
    Harness h("auto_prefill = \"never\"\n");
    const auto first = volume_a();
    const auto checkpoint = asked_then_detached(h, first);

    SUBCASE("the same volume: its job goes on after the grace") {
        h.scheduler->on_attached(first);
        CHECK(h.state_of(first) == DiskState::running); // the old job's, until reaped
        h.scheduler->reap();
        CHECK(h.state_of(first) == DiskState::waiting);
        CHECK(std::filesystem::exists(checkpoint));
        h.host.jobs.clear();
        h.quiet(first);
        CHECK(h.state_of(first) == DiskState::running);
        CHECK(h.host.jobs.count("xvdb"));
    }
    SUBCASE("another volume: judged as a disk never seen, the checkpoint dropped") {
        auto other = first;
        other.volume = "params=/var/lib/xen/b.raw";
        h.scheduler->on_attached(other);
        h.scheduler->reap();
        CHECK(std::any_of(h.log.begin(), h.log.end(), [](const std::string& l) {
            return l.find("another volume in its slot (params=/var/lib/xen/b.raw") !=
                   std::string::npos;
        }));
        CHECK_FALSE(std::filesystem::exists(checkpoint));
        CHECK(h.state_of(other) == DiskState::discovered);
        CHECK_FALSE(h.scheduler->disk(disk_identity(other))->requested);
    }
    SUBCASE("detached again before the reap: nothing came back") {
        h.scheduler->on_attached(first);
        h.scheduler->on_detached(first);
        h.scheduler->reap();
        CHECK(h.state_of(first) == DiskState::detached);
    }
}

TEST_CASE("another volume in a detached disk's slot: its record, checkpoint and request dropped") {
    Harness h("auto_prefill = \"never\"\n"); // a job only when asked for
    const auto first = volume_a();
    const auto checkpoint = asked_then_detached(h, first);
    h.scheduler->reap();
    REQUIRE(h.state_of(first) == DiskState::detached);
    h.host.jobs.clear();

    SUBCASE("the same volume back: its asked-for job goes on after the grace") {
        h.scheduler->on_attached(first);
        CHECK(h.state_of(first) == DiskState::waiting);
        CHECK(std::filesystem::exists(checkpoint));
        h.quiet(first);
        CHECK(h.state_of(first) == DiskState::running);
    }
    SUBCASE("another one: judged as a disk never seen, nobody asked for it") {
        auto other = first;
        other.volume = "params=/var/lib/xen/b.raw";
        h.scheduler->on_attached(other);
        CHECK(std::any_of(h.log.begin(), h.log.end(), [](const std::string& l) {
            return l.find("(xvdb): another volume in its slot (params=/var/lib/xen/b.raw, not "
                          "params=/var/lib/xen/a.raw)") != std::string::npos;
        }));
        CHECK_FALSE(std::filesystem::exists(checkpoint));
        CHECK(h.state->load().records.empty());
        CHECK(h.state_of(other) == DiskState::discovered);
        CHECK(h.host.jobs.empty());
        // Asked for now: recorded with its own volume, which a restart tells apart.
        REQUIRE(h.scheduler->start(disk_identity(other), {}).ok());
        const auto records = h.state->load().records;
        REQUIRE(records.size() == 1);
        CHECK(records[0].volume == "params=/var/lib/xen/b.raw");
    }
    SUBCASE("a volume that cannot be read now: judged anew, the checkpoint dropped") {
        auto unknown = first;
        unknown.volume.clear();
        h.scheduler->on_attached(unknown);
        CHECK(std::any_of(h.log.begin(), h.log.end(), [](const std::string& l) {
            return l.find("(xvdb): its volume cannot be read now (its record's: "
                          "params=/var/lib/xen/a.raw)") != std::string::npos;
        }));
        CHECK_FALSE(std::filesystem::exists(checkpoint));
        CHECK(h.state_of(unknown) == DiskState::discovered); // auto_prefill never
        CHECK_FALSE(h.scheduler->disk(disk_identity(unknown))->requested);
    }
}

TEST_CASE("after a restart: running jobs resume, warm disks stay warm, user stops stay") {
    std::map<std::string, DiskInfo> disks{{"xvdb", xen_disk("xvdb", 51728)},
                                          {"xvdc", xen_disk("xvdc", 51744)},
                                          {"xvdd", xen_disk("xvdd", 51760)}};
    Harness h("max_parallel = 3\n");
    for (const auto& [name, d] : disks) {
        h.scheduler->on_attached(d);
        h.quiet(d);
    }
    h.host.jobs["xvdc"]->finish(JobStatus::warm);
    h.scheduler->reap();
    REQUIRE(h.scheduler->pause(disk_identity(disks["xvdd"])).ok());
    h.scheduler->shutdown(); // SIGTERM: xvdb keeps "running" in its record

    h.host.jobs.clear();
    h.make(); // the daemon starts again on the same state directory
    for (const auto& [name, d] : disks)
        h.scheduler->on_attached(d);
    CHECK(h.state_of(disks["xvdb"]) == DiskState::waiting); // the grace first
    h.quiet(disks["xvdb"]);
    CHECK(h.state_of(disks["xvdb"]) == DiskState::running);
    CHECK(h.host.jobs.count("xvdb"));
    CHECK(h.state_of(disks["xvdc"]) == DiskState::warm);
    CHECK(h.state_of(disks["xvdd"]) == DiskState::paused);
    CHECK(h.host.jobs.size() == 1);
}

TEST_CASE("auto_prefill never: blank disks are discovered, and warmed when asked") {
    Harness h("auto_prefill = \"never\"\n");
    const auto d = xen_disk("xvdb", 51728);
    h.scheduler->on_attached(d);
    CHECK(h.state_of(d) == DiskState::discovered);
    CHECK(h.grace.empty());
    REQUIRE(h.scheduler->start(disk_identity(d), {}).ok());
    CHECK(h.state_of(d) == DiskState::running);
}

TEST_CASE("waiting for the boot: quiet disks wait until it has finished") {
    Harness h;
    h.scheduler->set_boot_finished(false);
    const auto d = xen_disk("xvdb", 51728);
    h.scheduler->on_attached(d);
    h.quiet(d);
    CHECK(h.state_of(d) == DiskState::waiting);
    CHECK(h.reason_of(d) == "waiting for the boot to finish");
    CHECK(h.scheduler->status_line().find("waiting for the boot to finish") != std::string::npos);
    h.scheduler->set_boot_finished(true);
    CHECK(h.state_of(d) == DiskState::running);
    CHECK(h.scheduler->status_line().rfind("warming xvdb", 0) == 0);
}

TEST_CASE("sleep or shutdown: jobs stop checkpointed, wait, and start again after") {
    Harness h("max_parallel = 2\n");
    const auto xvdb = xen_disk("xvdb", 51728), xvdc = xen_disk("xvdc", 51744),
               xvdd = xen_disk("xvdd", 51760);
    for (const auto& d : {xvdb, xvdc, xvdd}) {
        h.scheduler->on_attached(d);
        h.quiet(d);
    }
    REQUIRE(h.scheduler->pause(disk_identity(xvdc)).ok());
    CHECK(h.state_of(xvdd) == DiskState::queued);

    h.scheduler->hold("the system is going to sleep");
    CHECK(h.scheduler->held());
    CHECK_FALSE(h.scheduler->busy()); // every disk closed
    CHECK(h.state_of(xvdb) == DiskState::waiting);
    CHECK(h.reason_of(xvdb) == "the system is going to sleep");
    CHECK(h.state_of(xvdc) == DiskState::paused);
    CHECK(h.state_of(xvdd) == DiskState::queued);
    // Recorded as running: a shutdown now resumes it at the next boot.
    const auto records = h.state->load().records;
    const auto b = std::find_if(records.begin(), records.end(), [&](const JobRecord& r) {
        return r.identity == disk_identity(xvdb);
    });
    REQUIRE(b != records.end());
    CHECK(b->state == "running");
    // Nothing starts while held, even when asked.
    h.host.jobs.clear();
    REQUIRE(h.scheduler->resume(disk_identity(xvdc)).ok());
    CHECK(h.host.jobs.empty());

    h.scheduler->release_hold();
    CHECK_FALSE(h.scheduler->held());
    CHECK(h.state_of(xvdb) == DiskState::running);
    CHECK(h.host.jobs.size() == 2);
    CHECK(h.host.jobs.count("xvdb"));
}

TEST_CASE("adaptive pressure scales every running job's rate and queue depth; 0 holds them") {
    Harness h("max_parallel = 2\nqueue_depth = 8\n");
    const auto xvdb = xen_disk("xvdb", 51728), xvdc = xen_disk("xvdc", 51744);
    for (const auto& d : {xvdb, xvdc}) {
        h.scheduler->on_attached(d);
        h.quiet(d);
    }
    REQUIRE(h.host.jobs.size() == 2);
    CHECK(h.host.jobs["xvdb"]->rate == 50ULL << 20); // 100 MiB/s shared
    h.scheduler->set_pressure(0.25, 0, "backed off to 25% of its rate: xvda at 2.00 ms");
    CHECK(h.host.jobs["xvdb"]->rate == 12800ULL << 10);
    CHECK(h.host.jobs["xvdc"]->depth == 2);
    CHECK(h.scheduler->disk(disk_identity(xvdb))->adaptive.find("25%") != std::string::npos);
    h.scheduler->set_pressure(0, 0, "held for a quiet window");
    CHECK(h.host.jobs["xvdb"]->rate == 1);
    CHECK(h.host.jobs["xvdb"]->depth == 1);
    h.scheduler->set_pressure(1, 0, "");
    CHECK(h.scheduler->disk(disk_identity(xvdb))->adaptive.empty());
    CHECK(h.host.jobs["xvdb"]->rate == 50ULL << 20);
    CHECK(h.host.jobs["xvdb"]->depth == 8);

    // total_rate unlimited: the reference (the jobs' rate at full speed) is scaled.
    h.scheduler->set_total_rate(0);
    CHECK(h.host.jobs["xvdb"]->rate == 0);
    h.scheduler->set_pressure(0.5, 400ULL << 20, "backed off");
    CHECK(h.host.jobs["xvdb"]->rate == 100ULL << 20);
}

TEST_CASE("the state table: an outcome goes on only to a job again, an illegal change is refused") {
    for (const auto outcome : {DiskState::warm, DiskState::unproven, DiskState::not_warmable}) {
        CHECK(transition_allowed(DiskState::running, outcome));
        CHECK(transition_allowed(DiskState::paused, outcome));
        CHECK(transition_allowed(outcome, outcome)); // a new reason
        CHECK(transition_allowed(outcome, DiskState::queued));
        CHECK(is_finished(outcome));
    }
    CHECK(state_after(JobStatus::warm) == DiskState::warm);
    CHECK(state_after(JobStatus::unproven) == DiskState::unproven);
    CHECK(state_after(JobStatus::not_warmable) == DiskState::not_warmable);
    CHECK(state_after(JobStatus::visited) == DiskState::failed); // never left unjudged
    CHECK(parse_disk_state("done") == DiskState::unproven);      // a record from before
    CHECK_FALSE(transition_allowed(DiskState::warm, DiskState::running));
    CHECK_FALSE(transition_allowed(DiskState::warm, DiskState::cancelled));
    CHECK_FALSE(transition_allowed(DiskState::discovered, DiskState::running));
    CHECK_FALSE(transition_allowed(DiskState::cancelled, DiskState::running));
    for (const auto& s : disk_state_names)
        CHECK(parse_disk_state(s.name) == s.value);
    CHECK(state_after(JobStatus::released) == DiskState::released);
    CHECK(state_after(JobStatus::failed) == DiskState::failed);
}

TEST_CASE("a start's own rate of 0 is unlimited, outside the shared budget, and so recorded") {
    Harness h; // total_rate 100 MiB/s
    const auto xvdb = xen_disk("xvdb", 51728);
    h.scheduler->on_attached(xvdb);
    StartRequest unlimited;
    unlimited.rate_bytes_per_s = 0;
    REQUIRE(h.scheduler->start(disk_identity(xvdb), unlimited).ok());
    REQUIRE(h.host.jobs.count("xvdb"));
    CHECK(h.host.specs["xvdb"].options.rate_bytes_per_s == 0);

    // Taken up again after a restart: still its own, still unlimited.
    h.scheduler->shutdown();
    h.host.jobs.clear();
    h.make();
    h.scheduler->on_attached(xvdb);
    if (h.state_of(xvdb) == DiskState::waiting)
        h.quiet(xvdb);
    REQUIRE(h.host.jobs.count("xvdb"));
    CHECK(h.host.specs["xvdb"].options.rate_bytes_per_s == 0);
}

TEST_CASE("a disk's job ends are counted by outcome; a shutdown's stop is none") {
    Harness h;
    const auto xvdb = xen_disk("xvdb", 51728);
    h.run(xvdb);
    h.host.jobs["xvdb"]->finish(JobStatus::stepped_aside, "opened by mkfs.ext4 (pid 7)");
    h.scheduler->reap();
    REQUIRE(h.state_of(xvdb) == DiskState::waiting);
    h.quiet(xvdb);
    REQUIRE(h.state_of(xvdb) == DiskState::running);
    h.host.jobs["xvdb"]->finish(JobStatus::failed, "I/O error");
    h.scheduler->reap();
    REQUIRE(h.state_of(xvdb) == DiskState::failed);
    const auto ends = h.scheduler->disk(disk_identity(xvdb))->job_ends;
    CHECK(ends == std::map<JobStatus, uint64_t>{{JobStatus::failed, 1},
                                                {JobStatus::stepped_aside, 1}});

    const auto xvdc = xen_disk("xvdc", 51744);
    h.run(xvdc);
    h.scheduler->shutdown();
    REQUIRE(h.host.jobs["xvdc"]->finished());
    h.scheduler->reap();
    CHECK(h.scheduler->disk(disk_identity(xvdc))->job_ends.empty());
}

TEST_CASE("a start within a deadline: refused when too near, else paced to end then") {
    Harness h("max_parallel = 2\n"); // total_rate 100 MiB/s
    const uint64_t MiB = 1 << 20;
    const auto xvdb = xen_disk("xvdb", 51728), xvdc = xen_disk("xvdc", 51744);
    for (const auto& d : {xvdb, xvdc})
        h.scheduler->on_attached(d);
    const uint64_t size = xvdb.size_bytes;
    REQUIRE(size > 100 * MiB);
    StartRequest soon;
    soon.within_s = 1; // the whole disk in 1 s: over 100 MiB/s
    const auto refused = h.scheduler->start(disk_identity(xvdb), soon);
    REQUIRE_FALSE(refused.ok());
    CHECK(refusal_of(refused.error()) == Refusal::deadline_too_near);
    CHECK_FALSE(h.host.jobs.count("xvdb"));

    StartRequest hour;
    hour.within_s = 3600;
    REQUIRE(h.scheduler->start(disk_identity(xvdb), hour).ok());
    REQUIRE(h.host.jobs.count("xvdb"));
    // The rate the whole disk needs in an hour, aimed a minute early (a second may
    // have passed), not the total.
    const uint64_t paced = h.host.jobs["xvdb"]->rate;
    CHECK(paced >= size / 3541);
    CHECK(paced <= size / 3530 + 1);
    const auto view = h.scheduler->disk(disk_identity(xvdb));
    REQUIRE(view->deadline);
    // Whole seconds, the end rounded up: never sooner than asked.
    CHECK(view->deadline->at_unix - view->deadline->start_unix >= 3600);
    CHECK(view->deadline->at_unix - view->deadline->start_unix <= 3601);
    CHECK(view->pace.on_track);
    // Another job shares what the deadline leaves of the total.
    REQUIRE(h.scheduler->start(disk_identity(xvdc), {}).ok());
    h.scheduler->pace_deadlines();
    CHECK(h.host.jobs["xvdc"]->rate == 100 * MiB - h.host.jobs["xvdb"]->rate);
    // Ended for good, its deadline goes: a later job is not paced by it.
    h.host.jobs["xvdb"]->finish(JobStatus::warm);
    h.scheduler->reap();
    CHECK_FALSE(h.scheduler->disk(disk_identity(xvdb))->deadline);
    CHECK(h.host.jobs["xvdc"]->rate == 100 * MiB);
    // Its own rate is its cap: a deadline that needs more is refused against it.
    h.host.jobs["xvdc"]->finish(JobStatus::cancelled);
    h.scheduler->reap();
    StartRequest capped;
    capped.within_s = 3600;
    capped.rate_bytes_per_s = 1;
    const auto over_own = h.scheduler->start(disk_identity(xvdc), capped);
    REQUIRE_FALSE(over_own.ok());
    CHECK(over_own.error().message.find("its own rate") != std::string::npos);
}
