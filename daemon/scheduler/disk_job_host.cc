#include "scheduler/disk_job_host.hh"

#include <fcntl.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "base/unique_fd.hh"
#include "engine/device.hh"
#include "engine/plan.hh"

namespace prewarmd {
namespace {

// A PrefillJob on its own thread, with the disk it holds open.
class ThreadJob final : public RunningJob {
public:
    ThreadJob(Device device, const JobOptions& options, JobTarget target,
              std::unique_ptr<IoEngine> engine, EventSink events, std::function<void()> on_finished)
        : m_device(std::move(device)),
          m_job(options, std::move(target), std::move(engine), m_device, std::move(events)),
          m_thread([this, done = std::move(on_finished)] {
              m_final = m_job.run();
              m_finished = true;
              done();
          }) {}
    ~ThreadJob() override {
        if (m_thread.joinable()) {
            m_job.stop(JobState::cancelled, "the daemon is stopping");
            m_thread.join();
        }
    }

    ProgressSnapshot snapshot() const override { return m_job.snapshot(); }
    void pause() override { m_job.pause(); }
    void resume() override { m_job.resume(); }
    void stop(JobState as, std::string reason) override { m_job.stop(as, std::move(reason)); }
    void set_rate(uint64_t rate) override { m_job.set_rate(rate); }
    bool finished() const override { return m_finished; }
    ProgressSnapshot wait() override {
        if (m_thread.joinable())
            m_thread.join();
        return m_final;
    }

private:
    Device m_device; // closed when the job is gone: the exclusive open ends with it
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

Result<std::unique_ptr<RunningJob>> DiskJobHost::start(const DiskInfo& disk, const JobSpec& spec,
                                                       std::function<void()> on_finished) {
    const bool writes = spec.options.mode != Mode::read;
    auto device = Device::open(disk.devnode, writes ? Device::Access::write : Device::Access::read);
    if (!device)
        return device.error();
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
    if (!note.empty())
        m_log(true, spec.identity + ": " + note);

    JobTarget target;
    target.geometry = device->geometry();
    target.identity = spec.identity;
    target.regions.add(0, target.geometry.size_bytes);
    auto log = m_log;
    const auto identity = spec.identity;
    return std::unique_ptr<RunningJob>(new ThreadJob(
        std::move(*device), options, std::move(target), std::move(*engine),
        [log, identity](EventLevel level, const std::string& message) {
            log(level == EventLevel::warning, identity + ": " + message);
        },
        std::move(on_finished)));
}

} // namespace prewarmd
