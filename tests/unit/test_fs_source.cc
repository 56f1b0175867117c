// A filesystem job's chunks, on a fake filesystem: what it claims, where the
// chunks lie, the reserve, giving back under pressure, and the passes.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>

#include "engine/fs_source.hh"

using namespace prewarmd;

namespace {

constexpr uint64_t MiB = 1024 * 1024;

// A filesystem of `size` bytes on its device, whose allocator hands out free space
// from where the file's last claim ended (as ext4's and xfs's goal does), wrapping.
class FakeFs final : public SpaceClaim {
public:
    explicit FakeFs(uint64_t size) : m_size(size) { m_free.add(0, size); }

    void use(uint64_t begin, uint64_t end) { m_free.remove(begin, end); } // the workload's
    void give(uint64_t begin, uint64_t end) { m_free.add(begin, end); }

    Result<uint64_t> available() override { return m_free.total_bytes(); }
    Result<std::vector<ClaimedExtent>> claim(uint64_t bytes) override {
        std::vector<ClaimedExtent> out;
        while (bytes > 0 && !m_free.empty()) {
            const Extent* e = m_free.next_after(m_goal);
            if (!e)
                e = &m_free.extents().front();
            const uint64_t begin = std::max(e->offset, m_goal < e->end() ? m_goal : e->offset);
            const uint64_t length = std::min(bytes, e->end() - begin);
            out.push_back({m_file_end, begin, length});
            m_owned[m_file_end] = {begin, length};
            m_free.remove(begin, begin + length);
            m_file_end += length;
            m_goal = begin + length;
            bytes -= length;
        }
        m_file_end += bytes; // what it could not get: a hole
        return out;
    }
    Result<void> release(uint64_t file_offset, uint64_t length) override {
        for (auto it = m_owned.begin(); it != m_owned.end();) {
            if (it->first >= file_offset && it->first < file_offset + length) {
                m_free.add(it->second);
                it = m_owned.erase(it);
            } else {
                ++it;
            }
        }
        ++releases;
        return {};
    }
    Result<void> settle() override {
        ++settles;
        return {};
    }

    int releases = 0;
    int settles = 0;

private:
    uint64_t m_size;
    RangeSet m_free;
    std::map<uint64_t, Extent> m_owned; // file offset -> device range
    uint64_t m_file_end = 0;
    uint64_t m_goal = 0;
};

FsSourceOptions options(uint64_t reserve, uint64_t disk_offset = 0) {
    FsSourceOptions o;
    o.disk_offset = disk_offset;
    o.device_bytes = 1024 * MiB; // past every FakeFs here
    o.backend_block = 2 * MiB;
    o.chunk = 4 * MiB;
    o.reserve = reserve;
    o.step = 16 * MiB;
    return o;
}

// Takes every chunk there is now and says each was visited.
RangeSet drain(FsSource& source) {
    RangeSet seen;
    while (const Extent* chunk = source.peek()) {
        const Extent c = *chunk;
        source.take();
        seen.add(c);
        source.visited(c);
    }
    return seen;
}

} // namespace

TEST_CASE("fs source: whole backend blocks of the claimed space, on the disk, above the reserve") {
    auto fs = std::make_unique<FakeFs>(64 * MiB);
    auto& f = *fs;
    f.use(0, 3 * MiB); // metadata and files: the claims start mid-block
    // A partition that starts 1 MiB into the disk.
    FsSource source(std::move(fs), options(8 * MiB, 1 * MiB), {});
    REQUIRE(source.tick(Clock::now()));
    const auto seen = drain(source);
    REQUIRE(source.exhausted());
    for (const auto& e : seen.extents()) {
        CHECK(e.offset % (2 * MiB) == 0);
        CHECK(e.length % (2 * MiB) == 0);
    }
    // Device 3-64 MiB is disk 4-65 MiB: blocks 4-64 MiB, less the reserve's 8 MiB
    // at the end of the last pass's claims.
    CHECK(seen.covers(4 * MiB, 56 * MiB));
    CHECK(!seen.covers(2 * MiB, 4 * MiB));
    // It holds all but the reserve (and what falls short of a backend block).
    CHECK(f.available().value() >= 8 * MiB);
    CHECK(f.available().value() < 10 * MiB);
}

TEST_CASE("fs source: less available than the reserve gives back from the end, at once") {
    auto fs = std::make_unique<FakeFs>(64 * MiB);
    auto& f = *fs;
    FsSource source(std::move(fs), options(8 * MiB), {});
    // Claimed down to the reserve, each chunk visited as it comes.
    while (64 * MiB - f.available().value() < 56 * MiB) {
        REQUIRE(source.peek() != nullptr);
        const Extent c = *source.peek();
        source.take();
        source.visited(c);
    }
    f.use(56 * MiB, 60 * MiB); // the workload writes 4 MiB: 4 short of the reserve
    REQUIRE(source.tick(Clock::now()));
    CHECK(source.released_bytes() >= 4 * MiB);
    CHECK(f.available().value() >= 8 * MiB);
    CHECK(f.settles == 1);
    // No claims for a moment after that; the job is not over.
    CHECK(source.peek() == nullptr);
    CHECK(!source.exhausted());
}

TEST_CASE("fs source: pieces with a chunk out are kept, others given back, their chunks dropped") {
    auto fs = std::make_unique<FakeFs>(32 * MiB);
    auto& f = *fs;
    auto o = options(4 * MiB);
    o.step = 8 * MiB;
    FsSource source(std::move(fs), o, {});
    // The first piece (0-8 MiB): one chunk visited, one still out (being written).
    const Extent out = *source.peek();
    source.take();
    const Extent second = *source.peek();
    source.take();
    source.visited(second);
    // The second piece (8-16 MiB), claimed when the queue ran dry: both chunks queued.
    REQUIRE(source.peek() != nullptr);
    CHECK(source.peek()->offset == 8 * MiB);
    f.use(16 * MiB, 30 * MiB); // the workload: available 2 MiB, 2 short of the reserve
    REQUIRE(source.tick(Clock::now()));
    CHECK(source.released_bytes() == 8 * MiB); // the second piece, none of the first
    CHECK(f.available().value() == 10 * MiB);
    CHECK(f.settles == 1);
    CHECK(source.peek() == nullptr); // its queued chunks are gone, and claims wait
    source.visited(out);
    CHECK(!source.exhausted());
}

TEST_CASE("fs source: sliding on reaches what the reserve kept out, skipping what it warmed") {
    auto fs = std::make_unique<FakeFs>(64 * MiB);
    auto& f = *fs;
    FsSource source(std::move(fs), options(16 * MiB), {});
    const auto seen = drain(source);
    CHECK(source.exhausted());
    // The first claims stopped 16 MiB short; those after the slide went on.
    CHECK(source.swept_bytes() >= 64 * MiB);
    CHECK(seen.covers(0, 64 * MiB));
    CHECK(f.available().value() >= 16 * MiB);
    CHECK(source.total_bytes() == seen.total_bytes());
}

TEST_CASE("fs source: ranges a checkpoint says are done are not visited again") {
    RangeSet done;
    done.add(0, 32 * MiB);
    FsSource source(std::make_unique<FakeFs>(64 * MiB), options(0), done);
    const auto seen = drain(source);
    CHECK(!seen.empty());
    CHECK(seen.intersection(done).empty());
    CHECK(seen.covers(32 * MiB, 64 * MiB));
}

TEST_CASE("fs source: sparse, one piece at the start of each whole block, standing for it") {
    auto fs = std::make_unique<FakeFs>(64 * MiB);
    auto& f = *fs;
    f.use(0, 3 * MiB);
    auto o = options(8 * MiB, 1 * MiB);
    o.piece = 4096;
    RangeSet done;
    done.add(10 * MiB, 14 * MiB); // warmed by an earlier run
    FsSource source(std::move(fs), o, done);
    CHECK(source.sparse());
    RangeSet covered;
    unsigned pieces = 0;
    while (const Extent* chunk = source.peek()) {
        const Extent c = *chunk;
        source.take();
        CHECK(c.length == 4096);
        CHECK(c.offset % (2 * MiB) == 0);
        CHECK(source.covered(c).offset == c.offset);
        CHECK(source.covered(c).length == 2 * MiB);
        CHECK(!done.covers(c.offset, c.offset + 2 * MiB));
        covered.add(source.covered(c));
        source.visited(c);
        ++pieces;
    }
    REQUIRE(source.exhausted());
    CHECK(covered.covers(4 * MiB, 10 * MiB));
    CHECK(covered.covers(14 * MiB, 56 * MiB));
    CHECK(pieces == covered.total_bytes() / (2 * MiB));
    CHECK(source.total_bytes() == covered.total_bytes());
    CHECK(f.available().value() >= 8 * MiB);
}

TEST_CASE("fs source: a claimed place past the end of the filesystem's device stops it") {
    // As an xfs realtime file would map: on another device, at offsets this one has.
    auto fs = std::make_unique<FakeFs>(64 * MiB);
    auto o = options(8 * MiB);
    o.device_bytes = 20 * MiB;
    FsSource source(std::move(fs), o, {});
    const auto first = drain(source); // the first step, 0-16 MiB, lies on the device
    CHECK(first.covers(0, 16 * MiB));
    CHECK(source.peek() == nullptr); // the next, 16-32 MiB, does not
    const auto stopped = source.tick(Clock::now());
    REQUIRE_FALSE(stopped);
    CHECK(stopped.error().message.find("past the end of its device") != std::string::npos);
}
