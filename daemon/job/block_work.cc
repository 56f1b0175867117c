// A block job: the whole disk (or a file's holes), held to itself when asked for,
// shared otherwise, where the job and its probes step aside for whoever comes
// (docs/safety.md). Probed cold before a job from nothing.
#include <cerrno>

#include "base/units.hh"
#include "engine/checkpoint.hh"
#include "io/open_watch.hh"
#include "job/work.hh"
#include "safety/classify.hh"
#include "safety/system.hh"

namespace prewarmd {
namespace {

class BlockWork final : public JobWork {
public:
    BlockWork(Device device, std::optional<OpenWatch> opens, RangeSet regions)
        : m_device(std::move(device)), m_opens(std::move(opens)), m_regions(std::move(regions)) {
        if (m_opens)
            m_last = where_writers_start(m_device.geometry().size_bytes);
    }

    const Device& device() const override { return m_device; }

    JobTarget target() override {
        JobTarget t;
        t.geometry = m_device.geometry();
        t.regions = m_regions;
        t.last = m_last;
        t.allocated_bytes = t.geometry.size_bytes - m_regions.total_bytes();
        if (m_opens) {
            t.opens = &*m_opens;
            t.who_else = [disk = m_device.devnum()] { return someone_else(disk); };
        }
        return t;
    }

    // A job from nothing gets a cold probe of the disk (a resumed one has written
    // already, and keeps the cold probe of its record).
    std::optional<Result<ColdProbe>> probe_before(const JobSpec& spec,
                                                  const ProbeFigures& before) override {
        const bool writes = spec.options.mode != Mode::read;
        const auto checkpoint = load_checkpoint(spec.options.checkpoint_path);
        const bool fresh = !(before.cold && before.cold->strides) && !(checkpoint && *checkpoint);
        if (!spec.probe || !writes || !fresh || !m_device.geometry().is_block_device)
            return std::nullopt;
        if (m_opens)
            if (const auto who = someone_else(m_device.devnum()); !who.empty())
                return Result<ColdProbe>(Error{-EBUSY, "the disk is open by " + who});
        ProbeOptions options;
        if (m_opens)
            options.someone_else = [this] { return arrived(); };
        // A writer gone before the probe looked leaves only the kernel's count of
        // the disk's writes, above the probe's own (the job counts from its start).
        const auto counted = m_device.written_sectors();
        auto probe = probe_cold(m_device, options);
        const auto after = m_device.written_sectors();
        if (!probe || !counted || !after || !*counted || !*after)
            return probe;
        const uint64_t others = (**after - **counted) * 512;
        if (others > probe->written_bytes)
            return Result<ColdProbe>(Error{-EBUSY, "another writer wrote " +
                                                       format_size(others - probe->written_bytes) +
                                                       " to the disk during the probe"});
        return probe;
    }

    std::string_view probe_name() const override { return "probe"; }

    Result<std::unique_ptr<ChunkSource>> source(const Plan& plan, const RangeSet& done,
                                                uint64_t chunk) override {
        if (plan.sparse())
            return std::unique_ptr<ChunkSource>(
                std::make_unique<SparseQueue>(m_regions, plan.block, plan.piece, done, m_last));
        return std::unique_ptr<ChunkSource>(
            std::make_unique<ChunkQueue>(ChunkPlan(m_regions, chunk, done, m_last)));
    }

    bool probes_after() const override { return true; }
    bool fills_free_space() const override { return false; }

    std::string arrived() override {
        if (!m_opens || !m_opens->seen())
            return {};
        const auto who = someone_else(m_device.devnum());
        return who.empty() ? who : "the disk was opened by " + who;
    }

private:
    Device m_device; // closed when the job is gone, and its exclusive open (if any) with it
    std::optional<OpenWatch> m_opens;
    RangeSet m_regions;
    RangeSet m_last; // where other writers start: visited last on a shared disk
};

} // namespace

Result<std::unique_ptr<JobWork>> open_block_work(const JobSpec& spec, const EventSink&) {
    const bool writes = spec.options.mode != Mode::read;
    auto device = Device::open(spec.path, !writes          ? Device::Access::read
                                          : spec.requested ? Device::Access::write
                                                           : Device::Access::shared_write);
    if (!device)
        return device.error();
    // Watched from just after our own open: what it sees is someone else.
    std::optional<OpenWatch> opens;
    if (writes && device->geometry().is_block_device) {
        auto watch = OpenWatch::watch(spec.path);
        if (!watch)
            return watch.error();
        opens.emplace(std::move(*watch));
    }
    if (spec.disk) {
        const auto& disk = *spec.disk;
        if (auto same = same_disk(disk, *device); !same)
            return same.error();
        const auto verdict = classify(disk, device->fd(), SystemView::read());
        const bool allowed = verdict.verdict == Verdict::eligible ||
                             (verdict.verdict == Verdict::needs_request && spec.requested);
        if (!allowed)
            return Error{-EBUSY,
                         std::string(to_string(verdict.verdict)) + ": " + verdict.reasons_text()};
    }
    auto data = device->data_extents();
    if (!data)
        return data.error();
    auto regions = regions_to_visit(device->geometry(), *data);
    return std::unique_ptr<JobWork>(
        std::make_unique<BlockWork>(std::move(*device), std::move(opens), std::move(regions)));
}

} // namespace prewarmd
