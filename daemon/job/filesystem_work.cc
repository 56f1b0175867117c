// A filesystem job: the disk shared with its mounted filesystem (no exclusive
// open), chunks from the free space claimed through it (engine/fs_source.hh). No
// probe of the disk, whose places the filesystem may write: the probe is made in
// the claim.
#include <cerrno>

#include "base/units.hh"
#include "engine/fs_source.hh"
#include "io/free_space.hh"
#include "job/work.hh"

namespace prewarmd {
namespace {

class FilesystemWork final : public JobWork {
public:
    FilesystemWork(Device device, FreeSpaceFile claim, FsSourceOptions options)
        : m_device(std::move(device)), m_claim(std::move(claim)), m_options(options) {}

    const Device& device() const override { return m_device; }

    JobTarget target() override {
        JobTarget t;
        t.geometry = m_device.geometry();
        // The filesystem writes the disk all along: the sectors counted are not ours.
        t.foreign_writes_counted = false;
        return t;
    }

    std::optional<Result<ColdProbe>> probe_before(const JobSpec& spec,
                                                  const ProbeFigures&) override {
        // Where probes are allowed ([prefill] probe; `prefill` unless --strategy
        // full), or to prove sparse writes asked for: whether whole blocks warm at
        // once, and whether zero writes are kept (a fill where they are not).
        if (!(spec.probe || spec.strategy == Strategy::sparse) || !m_claim)
            return std::nullopt;
        return probe_in_claim(m_device, *m_claim, m_options);
    }

    std::string_view probe_name() const override { return "probe in the claim"; }

    Result<std::unique_ptr<ChunkSource>> source(const Plan& plan, const RangeSet& done,
                                                uint64_t chunk) override {
        if (!m_claim)
            return Error{-EALREADY, "the claim was taken already"};
        FsSourceOptions o = m_options;
        o.chunk = chunk;
        o.piece = plan.piece;
        if (plan.block)
            o.backend_block = plan.block;
        auto file = std::make_unique<FreeSpaceFile>(std::move(*m_claim));
        m_claim.reset();
        return std::unique_ptr<ChunkSource>(std::make_unique<FsSource>(std::move(file), o, done));
    }

    bool probes_after() const override { return false; }
    bool fills_free_space() const override { return true; }

    std::string arrived() override { return m_claim ? m_claim->lost() : std::string(); }

private:
    Device m_device;
    std::optional<FreeSpaceFile> m_claim; // until the job's source takes it
    FsSourceOptions m_options;
};

} // namespace

Result<std::unique_ptr<JobWork>> open_filesystem_work(const JobSpec& spec, const FilesystemJob& kind,
                                                      const EventSink& events) {
    const auto& fs = kind.fs;
    if (spec.options.mode == Mode::read)
        return Error{-EINVAL, "a filesystem job writes: mode \"read\" has nothing to do"};
    auto device = Device::open(spec.path, Device::Access::shared_write);
    if (!device)
        return device.error();
    if (spec.disk)
        if (auto same = same_disk(*spec.disk, *device); !same)
            return same.error();
    // The claim is made now: a filesystem gone since it was seen is an error of the start.
    auto claim = FreeSpaceFile::open(system_root() + fs.mount_point, fs.devnum);
    if (!claim)
        return claim.error();
    FsSourceOptions options;
    options.disk_offset = fs.offset_bytes;
    options.device_bytes = fs.size_bytes;
    options.backend_block = spec.options.backend_block_bytes;
    options.reserve = kind.reserve_bytes;
    if (events) {
        events(EventLevel::info, "the free space of " + fs.fstype + " on " + fs.device + " at " +
                                     fs.mount_point + ", keeping " +
                                     format_size(kind.reserve_bytes) + " available");
        if (fstrim_timer_enabled())
            events(EventLevel::info, "note: fstrim.timer is enabled: each week it discards the "
                                     "free space, which a thin backend may make cold again");
    }
    return std::unique_ptr<JobWork>(
        std::make_unique<FilesystemWork>(std::move(*device), std::move(*claim), options));
}

} // namespace prewarmd
