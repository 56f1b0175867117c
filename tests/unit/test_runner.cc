// The job runner (job/runner.cc) with a work of the test's own: a file on this
// machine's disk written by the engine, and a probe before that says what the test
// wants. What the runner does with the plan: the fill, stepping aside, refusing,
// and the word it ends with.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "engine/plan.hh"
#include "job/runner.hh"
#include "temp_dir.hh"

using namespace prewarmd;

namespace {

constexpr uint64_t MiB = 1024 * 1024;
constexpr uint64_t size = 8 * MiB;

class FakeWork final : public JobWork {
public:
    FakeWork(Device device, std::optional<Result<ColdProbe>> probe, bool fills,
             std::vector<Plan>& asked)
        : plans(asked), m_device(std::move(device)), m_probe(std::move(probe)), m_fills(fills) {}

    const Device& device() const override { return m_device; }
    JobTarget target() override {
        JobTarget t;
        t.geometry = m_device.geometry();
        t.geometry.is_block_device = block; // a disk's proof, or a file's
        t.regions.add(0, size);
        t.foreign_writes_counted = false;
        return t;
    }
    std::optional<Result<ColdProbe>> probe_before(const JobSpec&, const ProbeFigures&) override {
        return m_probe;
    }
    std::string_view probe_name() const override { return "probe"; }
    Result<std::unique_ptr<ChunkSource>> source(const Plan& plan, const RangeSet& done,
                                                uint64_t chunk) override {
        plans.push_back(plan);
        RangeSet regions;
        regions.add(0, size);
        if (plan.sparse())
            return std::unique_ptr<ChunkSource>(
                std::make_unique<SparseQueue>(regions, plan.block, plan.piece, done));
        return std::unique_ptr<ChunkSource>(
            std::make_unique<ChunkQueue>(ChunkPlan(regions, chunk, done)));
    }
    bool probes_after() const override { return after; }
    bool fills_free_space() const override { return m_fills; }
    std::string arrived() override { return {}; }

    std::vector<Plan>& plans; // as the job's source was asked for them
    bool after = false;
    bool block = true;

private:
    Device m_device;
    std::optional<Result<ColdProbe>> m_probe;
    bool m_fills;
};

ColdProbe probed(ZeroWrites zero_writes, Allocation allocation = Allocation::unknown) {
    ColdProbe p;
    p.strides = 16;
    p.allocation = allocation;
    p.allocation_note = "the evidence";
    p.zero_writes = zero_writes;
    p.zero_writes_note = "the figures";
    return p;
}

struct Harness {
    // A file of zeros but for 4 KiB of data 2 MiB in: backend block 1 holds data.
    Harness() {
        const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
        REQUIRE(fd >= 0);
        REQUIRE(::ftruncate(fd, static_cast<off_t>(size)) == 0);
        const std::vector<char> data(4096, 'D');
        REQUIRE(::pwrite(fd, data.data(), data.size(), 2 * MiB) == 4096);
        ::close(fd);
        spec.identity = "file-test";
        spec.path = path;
        spec.options.chunk_bytes = 2 * MiB; // one backend block (the options' default)
        spec.options.queue_depth = 2;
        spec.options.idle_priority = false;
        spec.io_engine = IoEngineKind::sync;
    }

    ProgressSnapshot run(std::optional<Result<ColdProbe>> probe, bool fills) {
        auto device = Device::open(path, Device::Access::write);
        REQUIRE_MESSAGE(device.ok(), (device.ok() ? "" : device.error().message));
        const int fd = device->fd();
        auto fake = std::make_unique<FakeWork>(std::move(*device), std::move(probe), fills, plans);
        fake->after = probes_after;
        fake->block = block;
        auto make_engine = [fd] {
            std::string note;
            return make_io_engine(IoEngineKind::sync, fd, 2, note);
        };
        auto engine = make_engine();
        REQUIRE(engine.ok());
        JobRunner runner(
            spec, std::move(fake),
            [this](EventLevel, const std::string& message) { events.push_back(message); },
            make_engine, std::move(*engine));
        return runner.run();
    }

    std::vector<char> content() const {
        std::vector<char> out(size);
        const int fd = ::open(path.c_str(), O_RDONLY);
        REQUIRE(::pread(fd, out.data(), size, 0) == static_cast<ssize_t>(size));
        ::close(fd);
        return out;
    }
    bool said(const std::string& text) const {
        return std::any_of(events.begin(), events.end(),
                           [&](const std::string& e) { return e.find(text) != std::string::npos; });
    }

    TempDir dir;
    std::string path = dir.file("disk.img");
    JobSpec spec;
    bool probes_after = false;
    bool block = true;
    std::vector<Plan> plans;
    std::vector<std::string> events;
};

bool all_of(const std::vector<char>& v, uint64_t from, uint64_t to, char c) {
    return std::all_of(v.begin() + static_cast<long>(from), v.begin() + static_cast<long>(to),
                       [c](char x) { return x == c; });
}

} // namespace

TEST_CASE("runner: where zero writes are discarded, free space is filled, blocks with data not") {
    Harness h;
    const auto end = h.run(probed(ZeroWrites::discarded), true);
    CHECK(end.status == JobStatus::warm); // the fill is data: the backend allocates it
    CHECK(end.reason.find("filled") == 0);
    const auto after = h.content();
    const char fill = static_cast<char>(free_space_fill);
    CHECK(all_of(after, 0, 2 * MiB, fill));
    CHECK(all_of(after, 2 * MiB, 2 * MiB + 4096, 'D')); // the block holding data: as it was
    CHECK(all_of(after, 2 * MiB + 4096, 4 * MiB, 0));
    CHECK(all_of(after, 4 * MiB, size, fill));
    REQUIRE(h.plans.size() == 1);
    CHECK(h.plans[0].fill == free_space_fill);
    CHECK(h.said("this backend discards zero writes"));
}

TEST_CASE("runner: a disk's content is never filled, whatever the probe found") {
    Harness h;
    const auto end = h.run(probed(ZeroWrites::discarded), false);
    CHECK(end.status == JobStatus::unproven); // zeros, where they are discarded
    const auto after = h.content();
    CHECK(all_of(after, 0, 2 * MiB, 0));
    CHECK(all_of(after, 2 * MiB, 2 * MiB + 4096, 'D'));
    CHECK(all_of(after, 2 * MiB + 4096, size, 0));
}

TEST_CASE("runner: someone at the disk during the probe: it steps aside before writing") {
    Harness h;
    const auto end =
        h.run(Result<ColdProbe>(Error{-EBUSY, "the disk was opened by mkfs.ext4 (pid 7)"}), false);
    CHECK(end.status == JobStatus::stepped_aside);
    CHECK(end.reason == "the disk was opened by mkfs.ext4 (pid 7)");
    CHECK(h.plans.empty()); // the job's source never asked
    CHECK(h.said("stepping aside before the job"));
}

TEST_CASE("runner: forced sparse on per-sector allocation fails before writing") {
    Harness h;
    h.spec.strategy = Strategy::sparse;
    const auto end = h.run(probed(ZeroWrites::kept, Allocation::per_sector), false);
    CHECK(end.status == JobStatus::failed);
    CHECK(end.reason.find("sparse writes would leave the middle of the blocks cold") == 0);
}

TEST_CASE("runner: zero writes not found kept: unproven, not called warm, and no warm probe") {
    Harness h;
    h.spec.probe = true;
    h.probes_after = true;
    const auto end = h.run(probed(ZeroWrites::unknown), false);
    CHECK(end.status == JobStatus::unproven);
    CHECK(end.reason == "written, not proven warm: zero writes unknown (the figures)");
    CHECK(h.said("unproven: written, not proven warm"));
}

TEST_CASE("runner: zero writes found discarded on the disk: not_warmable, saying what warms it") {
    Harness h;
    h.spec.probe = true;
    h.probes_after = true;
    const auto end = h.run(probed(ZeroWrites::discarded), false);
    CHECK(end.status == JobStatus::not_warmable);
    CHECK(end.reason.find("its filesystem's job, once mounted") != std::string::npos);
}

TEST_CASE("runner: zero writes kept and every block written: warm, without a penalty to probe") {
    Harness h;
    h.spec.probe = true;
    h.probes_after = true;
    const auto end = h.run(probed(ZeroWrites::kept), false);
    CHECK(end.status == JobStatus::warm);
    CHECK(end.reason == "every block written, and zero writes are kept (the figures)");
}

TEST_CASE("runner: not probed: unproven, whatever was written") {
    Harness h;
    h.probes_after = true;
    const auto end = h.run(std::nullopt, false);
    CHECK(end.status == JobStatus::unproven);
    CHECK(end.reason == "written, not proven warm: not probed");
    CHECK(end.written_bytes > 0);
}

TEST_CASE("runner: a file is warm when its filesystem says no hole is left, whatever the probe") {
    Harness h;
    h.probes_after = true;
    h.block = false;
    // The block holding data is left alone, holes and all: not warm, and said so.
    const auto holes = h.run(std::nullopt, false);
    CHECK(holes.status == JobStatus::unproven);
    CHECK(holes.reason == "written, not proven warm: 2.00 MiB of holes left (SEEK_HOLE)");
    // Zeros where the data was: every block is written, none left a hole.
    const int fd = ::open(h.path.c_str(), O_WRONLY);
    REQUIRE(fd >= 0);
    const std::vector<char> zeros(4096, 0);
    REQUIRE(::pwrite(fd, zeros.data(), zeros.size(), 2 * MiB) == 4096);
    ::close(fd);
    const auto end = h.run(std::nullopt, false);
    CHECK(end.status == JobStatus::warm);
    CHECK(end.reason == "no hole left: every byte is allocated (SEEK_HOLE)");
}
