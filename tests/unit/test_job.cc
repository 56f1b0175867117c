#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <numeric>
#include <random>
#include <thread>

#include "engine/checkpoint.hh"
#include "engine/job.hh"
#include "fake_io.hh"
#include "io/open_watch.hh"
#include "temp_dir.hh"

using namespace prewarmd;

namespace {

constexpr uint64_t KiB = 1024;
constexpr uint64_t MiB = 1024 * KiB;

// A disk of zeros with data at the given offsets (one 4 KiB run each).
std::vector<char> disk_with_data(uint64_t size, std::initializer_list<uint64_t> offsets) {
    std::vector<char> data(size, 0);
    std::mt19937 random(42);
    for (const auto offset : offsets)
        for (uint64_t i = 0; i < 4 * KiB && offset + i < size; ++i)
            data[offset + i] = static_cast<char>(random() % 255 + 1);
    return data;
}

struct Harness {
    explicit Harness(std::vector<char> content, JobOptions opts = {})
        : disk(std::move(content)), options(opts) {
        options.idle_priority = false;
        options.checkpoint_interval = std::chrono::milliseconds(0);
        options.retry_backoff = std::chrono::milliseconds(1);
    }

    PrefillJob& make(JobTarget target = {}) {
        auto engine = std::make_unique<FakeIo>(disk);
        io = engine.get();
        target.geometry.size_bytes = disk.data.size();
        target.geometry.is_block_device = true;
        target.identity = identity;
        target.regions.add(0, disk.data.size());
        job = std::make_unique<PrefillJob>(
            options, std::move(target), std::move(engine), disk,
            [this](EventLevel, const std::string& m) { events.push_back(m); });
        return *job;
    }
    ProgressSnapshot run() { return make().run(); }
    // Every test: no phase change the job's table forbids.
    ~Harness() { CHECK_FALSE(saw_event("BUG:")); }

    bool saw_event(std::string_view text) const {
        return std::any_of(events.begin(), events.end(),
                           [&](const auto& e) { return e.find(text) != std::string::npos; });
    }

    FakeDisk disk;
    JobOptions options;
    std::string identity = "fake-disk";
    FakeIo* io = nullptr;
    std::unique_ptr<PrefillJob> job;
    std::vector<std::string> events;
};

uint64_t total(const std::vector<Extent>& extents) {
    return std::accumulate(extents.begin(), extents.end(), uint64_t{0},
                           [](uint64_t sum, const Extent& e) { return sum + e.length; });
}

} // namespace

TEST_CASE("zero mode writes zeros over zero blocks only, and changes nothing") {
    const auto before = disk_with_data(64 * MiB + 12 * KiB, {5 * MiB, 30 * MiB + 123 * 512});
    JobOptions options;
    options.chunk_bytes = 4 * MiB;
    Harness h(before, options);
    const auto result = h.run();
    CHECK(result.status == JobStatus::visited);
    CHECK(h.disk.data == before);
    // Two 2 MiB blocks hold data; the rest, including the 12 KiB tail, was written.
    CHECK(result.skipped_bytes == 4 * MiB);
    CHECK(result.written_bytes == 64 * MiB + 12 * KiB - 4 * MiB);
    CHECK(result.read_bytes == 64 * MiB + 12 * KiB);
    CHECK(result.done_bytes == result.total_bytes);
    for (const auto& w : h.io->writes) {
        CHECK_FALSE((w.offset <= 5 * MiB && 5 * MiB < w.end()));
        CHECK_FALSE((w.offset <= 30 * MiB && 30 * MiB < w.end()));
    }
    CHECK(h.io->fsyncs >= 1);
    CHECK(result.write_latency.count == h.io->writes.size());
}

TEST_CASE("zero mode checks each backend block: data blocks alone are left") {
    // 4 MiB chunks of two 2 MiB blocks; data in the second block of chunk 1 and
    // in the middle block of the three-block tail chunk.
    const auto before = disk_with_data(16 * MiB, {6 * MiB + 4 * KiB, 13 * MiB});
    JobOptions options{.chunk_bytes = 4 * MiB, .backend_block_bytes = MiB};
    Harness h(before, options);
    const auto result = h.run();
    CHECK(result.status == JobStatus::visited);
    CHECK(h.disk.data == before);
    CHECK(result.skipped_bytes == 2 * MiB);
    RangeSet written;
    for (const auto& w : h.io->writes)
        written.add(w);
    CHECK(written.total_bytes() == 14 * MiB);
    CHECK(written.covers(0, 6 * MiB));
    CHECK(written.covers(7 * MiB, 13 * MiB));
    CHECK(written.covers(14 * MiB, 16 * MiB));
}

TEST_CASE("rewrite mode writes back everything it read, unchanged") {
    const auto before = disk_with_data(16 * MiB + 512, {0, 7 * MiB, 16 * MiB - 4 * KiB});
    Harness h(before, {.mode = Mode::rewrite, .chunk_bytes = 2 * MiB});
    const auto result = h.run();
    CHECK(result.status == JobStatus::visited);
    CHECK(h.disk.data == before);
    CHECK(total(h.io->writes) == 16 * MiB + 512);
    CHECK(result.skipped_bytes == 0);
}

TEST_CASE("read mode only reads") {
    const auto before = disk_with_data(8 * MiB, {MiB});
    Harness h(before, {.mode = Mode::read, .chunk_bytes = MiB});
    const auto result = h.run();
    CHECK(result.status == JobStatus::visited);
    CHECK(h.io->writes.empty());
    CHECK(total(h.io->reads) == 8 * MiB);
    CHECK(h.disk.data == before);
}

TEST_CASE("the queue depth bounds the chunks in flight") {
    for (const unsigned depth : {1u, 3u, 8u}) {
        CAPTURE(depth);
        Harness h(std::vector<char>(32 * MiB, 0), {.chunk_bytes = MiB, .queue_depth = depth});
        REQUIRE(h.run().status == JobStatus::visited);
        CHECK(h.io->max_in_flight <= depth);
        if (depth > 1)
            CHECK(h.io->max_in_flight > 1);
    }
}

TEST_CASE("a depth command lowers the chunks in flight while the job runs") {
    Harness h(std::vector<char>(32 * MiB, 0), {.chunk_bytes = MiB, .queue_depth = 8});
    h.make();
    h.job->command(DepthCommand{1}); // taken up with the first commands, before any chunk
    REQUIRE(h.job->run().status == JobStatus::visited);
    CHECK(h.io->max_in_flight == 1);
    CHECK(total(h.io->writes) == 32 * MiB);
}

TEST_CASE("short reads and writes are completed, not ignored") {
    const auto before = disk_with_data(8 * MiB, {3 * MiB});
    Harness h(before, {.mode = Mode::rewrite, .chunk_bytes = MiB});
    unsigned shortened = 0;
    h.make();
    h.io->hook = [&](IoRequest& r) -> std::optional<int64_t> {
        if (r.op != IoOp::fsync && r.length > 4 * KiB) {
            r.length = r.length / 2 / 512 * 512;
            ++shortened;
        }
        return std::nullopt;
    };
    const auto result = h.job->run();
    CHECK(result.status == JobStatus::visited);
    CHECK(shortened > 0);
    CHECK(total(h.io->writes) == 8 * MiB);
    CHECK(h.disk.data == before);
}

TEST_CASE("EIO is retried with backoff, then fails naming the offset") {
    SUBCASE("a passing error") {
        Harness h(std::vector<char>(8 * MiB, 0), {.chunk_bytes = MiB});
        h.make();
        int failures = 2;
        h.io->hook = [&](IoRequest& r) -> std::optional<int64_t> {
            if (r.op == IoOp::write && r.offset == 5 * MiB && failures-- > 0)
                return -EIO;
            return std::nullopt;
        };
        CHECK(h.job->run().status == JobStatus::visited);
        CHECK(h.saw_event("retry 2 of 3"));
    }
    SUBCASE("a lasting error") {
        Harness h(std::vector<char>(8 * MiB, 0), {.chunk_bytes = MiB});
        h.make();
        h.io->hook = [&](IoRequest& r) -> std::optional<int64_t> {
            if (r.op == IoOp::write && r.offset == 5 * MiB)
                return -EIO;
            return std::nullopt;
        };
        const auto result = h.job->run();
        CHECK(result.status == JobStatus::failed);
        CHECK(result.reason.find("write at offset 5242880") != std::string::npos);
        CHECK(result.reason.find("Input/output error") != std::string::npos);
        CHECK(result.reason.find("after 3 retries") != std::string::npos);
    }
}

TEST_CASE("a write retried after EIO looks for others first, as a first write does") {
    // The last chunk, one at a time: its retry is the next write the job makes.
    Harness h(std::vector<char>(8 * MiB, 0), {.chunk_bytes = MiB, .queue_depth = 1});
    h.make();
    int attempts = 0;
    h.io->hook = [&](IoRequest& r) -> std::optional<int64_t> {
        if (r.op == IoOp::write && r.offset == 7 * MiB && attempts++ == 0) {
            h.disk.sectors_written += 64 * MiB / 512; // someone wrote while ours failed
            return -EIO;
        }
        return std::nullopt;
    };
    const auto result = h.job->run();
    CHECK(result.status == JobStatus::stepped_aside);
    CHECK(result.reason.find("another writer wrote") != std::string::npos);
    CHECK(attempts == 1); // the retry never went out
}

TEST_CASE("the rest of a short write looks for others first, and counts as ours only once") {
    Harness h(std::vector<char>(8 * MiB, 0), {.chunk_bytes = MiB, .queue_depth = 1});
    h.make();
    int writes = 0;
    h.io->hook = [&](IoRequest& r) -> std::optional<int64_t> {
        if (r.op == IoOp::write && r.offset >= 7 * MiB && writes++ == 0) {
            r.length /= 2;                              // half of it goes out
            h.disk.sectors_written += 64 * KiB / 512; // and someone else's 64 KiB
        }
        return std::nullopt;
    };
    const auto result = h.job->run();
    CHECK(result.status == JobStatus::stepped_aside);
    CHECK(result.reason.find("another writer wrote 64.0 KiB") != std::string::npos);
    CHECK(writes == 1); // the rest never went out
}

TEST_CASE("ENOSPC pauses the job; resumed, it finishes") {
    Harness h(std::vector<char>(8 * MiB, 0), {.chunk_bytes = MiB});
    h.make();
    bool full = true;
    h.io->hook = [&](IoRequest& r) -> std::optional<int64_t> {
        if (r.op == IoOp::write && r.offset >= 4 * MiB && full) {
            full = false;
            h.job->command(ResumeCommand{}); // space freed: the job goes on once it has paused
            return -ENOSPC;
        }
        return std::nullopt;
    };
    const auto result = h.job->run();
    CHECK(result.status == JobStatus::visited);
    CHECK(h.saw_event("the backend is full"));
    CHECK(total(h.io->writes) == 8 * MiB);
}

TEST_CASE("a vanished device ends the job as detached") {
    SUBCASE("ENODEV") {
        Harness h(std::vector<char>(8 * MiB, 0), {.chunk_bytes = MiB});
        h.make();
        h.io->hook = [&](IoRequest& r) -> std::optional<int64_t> {
            return r.offset >= 2 * MiB && r.op != IoOp::fsync ? std::optional<int64_t>(-ENODEV)
                                                              : std::nullopt;
        };
        const auto result = h.job->run();
        CHECK(result.status == JobStatus::detached);
        CHECK(result.reason.find("went away") != std::string::npos);
    }
    SUBCASE("EIO from a device that is gone") {
        Harness h(std::vector<char>(8 * MiB, 0), {.chunk_bytes = MiB});
        h.make();
        h.io->hook = [&](IoRequest& r) -> std::optional<int64_t> {
            if (r.offset >= 2 * MiB && r.op != IoOp::fsync) {
                h.disk.is_present = false;
                return -EIO;
            }
            return std::nullopt;
        };
        CHECK(h.job->run().status == JobStatus::detached);
    }
}

TEST_CASE("a write by anyone else makes the job step aside within a second") {
    // 64 MiB at 32 MiB/s take 2 s; someone writes 4 KiB early on.
    Harness h(std::vector<char>(64 * MiB, 0),
              {.chunk_bytes = MiB, .queue_depth = 4, .rate_bytes_per_s = 32 * MiB});
    h.make();
    h.io->hook = [&](IoRequest& r) -> std::optional<int64_t> {
        if (r.op == IoOp::read && r.offset == 4 * MiB)
            h.disk.sectors_written += 8;
        return std::nullopt;
    };
    const auto result = h.job->run();
    CHECK(result.status == JobStatus::stepped_aside);
    CHECK(result.reason.find("another writer wrote 4.00 KiB") != std::string::npos);
    CHECK(total(h.io->writes) < 48 * MiB);
}

TEST_CASE("a small foreign write is seen though our writes are always in flight") {
    // Every write completes only at the next reap, so ours are in flight at every
    // moment the job is busy; the check holds new writes back to look.
    Harness h(std::vector<char>(256 * MiB, 0), {.chunk_bytes = MiB, .queue_depth = 8});
    h.make();
    h.io->hook = [&](IoRequest& r) -> std::optional<int64_t> {
        if (r.op == IoOp::write && r.offset == 2 * MiB)
            h.disk.sectors_written += 1; // one sector
        if (r.op == IoOp::write)
            std::this_thread::sleep_for(std::chrono::milliseconds(10)); // 2.5 s in all
        return std::nullopt;
    };
    const auto result = h.job->run();
    CHECK(result.status == JobStatus::stepped_aside);
    CHECK(result.reason.find("another writer wrote 512 B") != std::string::npos);
    CHECK(total(h.io->writes) < 200 * MiB); // stopped by the check, not at the end
}

TEST_CASE("a foreign write in the last second still shows at the end") {
    Harness h(std::vector<char>(8 * MiB, 0), {.chunk_bytes = MiB});
    h.make();
    h.io->hook = [&](IoRequest& r) -> std::optional<int64_t> {
        if (r.op == IoOp::write && r.offset == 7 * MiB)
            h.disk.sectors_written += 8;
        return std::nullopt;
    };
    CHECK(h.job->run().status == JobStatus::stepped_aside);
}

TEST_CASE("a write count that cannot be read stops the job: a foreign write would go unseen") {
    SUBCASE("at the start: nothing written") {
        Harness h(std::vector<char>(8 * MiB, 0), {.chunk_bytes = MiB});
        h.disk.count_unreadable = true;
        h.make();
        const auto result = h.job->run();
        CHECK(result.status == JobStatus::stepped_aside);
        CHECK(result.reason.find("write count cannot be read (stat: Too many open files)") !=
              std::string::npos);
        CHECK(total(h.io->writes) == 0);
    }
    SUBCASE("midway: no write after") {
        Harness h(std::vector<char>(64 * MiB, 0),
                  {.chunk_bytes = MiB, .queue_depth = 4, .rate_bytes_per_s = 32 * MiB});
        h.make();
        h.io->hook = [&](IoRequest& r) -> std::optional<int64_t> {
            if (r.op == IoOp::read && r.offset == 4 * MiB)
                h.disk.count_unreadable = true;
            return std::nullopt;
        };
        const auto result = h.job->run();
        CHECK(result.status == JobStatus::stepped_aside);
        CHECK(result.reason.find("another writer would go unseen") != std::string::npos);
        CHECK(total(h.io->writes) < 48 * MiB);
    }
    SUBCASE("a count that went back: not the disk it began on") {
        Harness h(std::vector<char>(64 * MiB, 0),
                  {.chunk_bytes = MiB, .queue_depth = 4, .rate_bytes_per_s = 32 * MiB});
        h.disk.sectors_written = 1000;
        h.make();
        h.io->hook = [&](IoRequest& r) -> std::optional<int64_t> {
            if (r.op == IoOp::read && r.offset == 4 * MiB)
                h.disk.sectors_written = 0;
            return std::nullopt;
        };
        const auto result = h.job->run();
        CHECK(result.status == JobStatus::stepped_aside);
        CHECK(result.reason.find("write count went back") != std::string::npos);
    }
}

TEST_CASE("stop, then resume from the checkpoint: nothing unfinished is skipped") {
    TempDir dir;
    const auto before = disk_with_data(48 * MiB, {20 * MiB});
    JobOptions options{.chunk_bytes = MiB, .queue_depth = 4};
    options.checkpoint_path = dir.file("ckpt");

    Harness first(before, options);
    first.make();
    first.io->hook = [&](IoRequest& r) -> std::optional<int64_t> {
        if (r.op == IoOp::read && r.offset == 24 * MiB)
            first.job->command(StopCommand{});
        return std::nullopt;
    };
    const auto stopped = first.job->run();
    CHECK(stopped.status == JobStatus::cancelled);
    CHECK(stopped.done_bytes < 48 * MiB);
    auto saved = load_checkpoint(options.checkpoint_path);
    REQUIRE(saved);
    REQUIRE(*saved);
    CHECK_FALSE((*saved)->complete);
    const RangeSet done_first = (*saved)->done;
    CHECK(done_first.total_bytes() > 0);

    // The second run starts from the disk the first left.
    Harness second(first.disk.data, options);
    const auto finished = second.run();
    CHECK(finished.status == JobStatus::visited);
    CHECK(finished.resumed_bytes == done_first.total_bytes());
    CHECK(second.disk.data == before);
    // Every zero chunk was written by one run or the other.
    RangeSet written;
    for (const auto& w : first.io->writes)
        written.add(w);
    for (const auto& w : second.io->writes)
        written.add(w);
    CHECK(written.covers(0, 20 * MiB));
    CHECK(written.covers(21 * MiB, 48 * MiB));
    // Nothing done before was redone.
    for (const auto& w : second.io->writes)
        CHECK_FALSE(done_first.covers(w.offset, w.end()));
    auto final_checkpoint = load_checkpoint(options.checkpoint_path);
    CHECK((*final_checkpoint)->complete);
}

TEST_CASE("pause holds the job until resume; chunks in flight finish") {
    Harness h(std::vector<char>(16 * MiB, 0), {.chunk_bytes = MiB, .queue_depth = 4});
    h.make();
    std::atomic<bool> paused_seen{false};
    h.io->hook = [&](IoRequest& r) -> std::optional<int64_t> {
        if (r.op == IoOp::read && r.offset == 6 * MiB)
            h.job->command(PauseCommand{});
        return std::nullopt;
    };
    std::thread resumer([&] {
        for (int i = 0; i < 500 && h.job->snapshot().status != JobStatus::paused; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        paused_seen = h.job->snapshot().status == JobStatus::paused;
        const auto at_pause = h.job->snapshot().done_bytes;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        CHECK(h.job->snapshot().done_bytes == at_pause); // nothing moves while paused
        h.job->command(ResumeCommand{});
    });
    const auto result = h.job->run();
    resumer.join();
    CHECK(paused_seen);
    CHECK(result.status == JobStatus::visited);
    CHECK(total(h.io->writes) == 16 * MiB);
}

TEST_CASE("while a probe holds the quiet, a job starts no I/O; in flight, it finishes first") {
    Harness h(std::vector<char>(16 * MiB, 0), {.chunk_bytes = MiB, .queue_depth = 4});
    h.make();
    std::atomic<unsigned> submitted{0};
    std::atomic<uint64_t> written{0};
    std::atomic<bool> reached{false};
    h.io->hook = [&](IoRequest& r) -> std::optional<int64_t> {
        ++submitted;
        if (r.op == IoOp::write)
            written += r.length;
        if (r.op == IoOp::read && r.offset == 4 * MiB) { // the probe starts here
            reached = true;
            for (int i = 0; i < 5000 && !ProbeQuiet::process().held(); ++i)
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        return std::nullopt;
    };
    std::thread probe([&] {
        for (int i = 0; i < 5000 && !reached; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        const ProbeQuiet::Hold hold(ProbeQuiet::process(), std::chrono::seconds(10));
        CHECK(ProbeQuiet::process().busy() == 0);
        CHECK(written < 16 * MiB); // the job waits for the probe
        const unsigned at_hold = submitted;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        CHECK(submitted == at_hold);
    });
    const auto result = h.job->run();
    probe.join();
    CHECK(result.status == JobStatus::visited);
    CHECK(total(h.io->writes) == 16 * MiB);
}

TEST_CASE("a checkpoint of another disk or mode is refused; a damaged one is ignored") {
    TempDir dir;
    JobOptions options{.chunk_bytes = MiB};
    options.checkpoint_path = dir.file("ckpt");
    {
        Harness h(std::vector<char>(4 * MiB, 0), options);
        REQUIRE(h.run().status == JobStatus::visited);
    }
    SUBCASE("another disk") {
        Harness h(std::vector<char>(4 * MiB, 0), options);
        h.identity = "another-disk";
        const auto result = h.run();
        CHECK(result.status == JobStatus::failed);
        CHECK(result.reason.find("belongs to another disk") != std::string::npos);
        CHECK(h.io->writes.empty());
    }
    SUBCASE("another size") {
        Harness h(std::vector<char>(8 * MiB, 0), options);
        CHECK(h.run().status == JobStatus::failed);
    }
    SUBCASE("another mode") {
        options.mode = Mode::rewrite;
        Harness h(std::vector<char>(4 * MiB, 0), options);
        const auto result = h.run();
        CHECK(result.status == JobStatus::failed);
        CHECK(result.reason.find("mode zero") != std::string::npos);
    }
    SUBCASE("damaged") {
        std::fstream f(options.checkpoint_path, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(60);
        f.put('#');
        f.close();
        Harness h(std::vector<char>(4 * MiB, 0), options);
        const auto result = h.run();
        CHECK(result.status == JobStatus::visited);
        CHECK(result.resumed_bytes == 0);
        CHECK(total(h.io->writes) == 4 * MiB);
        CHECK(h.saw_event("damaged checkpoint"));
    }
}

TEST_CASE("a throttled job keeps to its rate") {
    // 4 MiB at 16 MiB/s with a burst of one 1 MiB chunk: at least 3/16 s.
    Harness h(std::vector<char>(4 * MiB, 0),
              {.chunk_bytes = MiB, .rate_bytes_per_s = 16 * MiB, .burst_bytes = MiB});
    const auto start = Clock::now();
    CHECK(h.run().status == JobStatus::visited);
    CHECK(Clock::now() - start >= std::chrono::milliseconds(187));
}

TEST_CASE("another process opens the disk: no write of the job's goes out after it") {
    // The watch is on a file standing for the disk's node; opening it is what mkfs or
    // dd would do. The job looks before each write it starts.
    TempDir dir;
    const auto node = dir.file("node");
    std::ofstream(node) << "x";
    auto watch = OpenWatch::watch(node);
    REQUIRE(watch.ok());
    Harness h(std::vector<char>(64 * MiB, 0), {.chunk_bytes = MiB, .queue_depth = 4});
    JobTarget target;
    target.opens = &*watch;
    bool opened = false;
    target.who_else = [&] { return std::string(opened ? "dd (pid 4242)" : ""); };
    h.make(std::move(target));
    size_t writes_at_open = 0;
    h.io->hook = [&](IoRequest& r) -> std::optional<int64_t> {
        if (r.op == IoOp::read && r.offset == 10 * MiB && !opened) {
            std::ifstream(node).get(); // someone opens the node
            opened = true;
            writes_at_open = h.io->writes.size();
        }
        return std::nullopt;
    };
    const auto result = h.job->run();
    CHECK(result.status == JobStatus::stepped_aside);
    CHECK(result.reason == "the disk was opened by dd (pid 4242)");
    CHECK(opened);
    // Writes queued before the open was seen finish; none starts after it. The
    // fake performs a write when it is submitted: at most the depth more.
    CHECK(h.io->writes.size() <= writes_at_open + 4);
    CHECK(h.saw_event("stepping aside: the disk was opened by dd (pid 4242)"));
}

TEST_CASE("someone holds the disk when the job starts: it steps aside before any write") {
    // They opened it before the job's watch began: the watch never sees them.
    TempDir dir;
    const auto node = dir.file("node");
    std::ofstream(node) << "x";
    auto watch = OpenWatch::watch(node);
    REQUIRE(watch.ok());
    Harness h(std::vector<char>(8 * MiB, 0), {.chunk_bytes = MiB});
    JobTarget target;
    target.opens = &*watch;
    target.who_else = [] { return std::string("mkfs.ext4 (pid 77)"); };
    h.make(std::move(target));
    const auto result = h.job->run();
    CHECK(result.status == JobStatus::stepped_aside);
    CHECK(result.reason == "the disk is open by mkfs.ext4 (pid 77)");
    CHECK(h.io->writes.empty());
}

TEST_CASE("an open by a reader such as udev's probe does not stop the job") {
    TempDir dir;
    const auto node = dir.file("node");
    std::ofstream(node) << "x";
    auto watch = OpenWatch::watch(node);
    REQUIRE(watch.ok());
    Harness h(std::vector<char>(16 * MiB, 0), {.chunk_bytes = MiB});
    JobTarget target;
    target.opens = &*watch;
    target.who_else = [] { return std::string(); }; // only udev's worker, or gone
    h.make(std::move(target));
    h.io->hook = [&](IoRequest& r) -> std::optional<int64_t> {
        if (r.op == IoOp::read && r.offset == 4 * MiB)
            std::ifstream(node).get();
        return std::nullopt;
    };
    CHECK(h.job->run().status == JobStatus::visited);
    CHECK(total(h.io->writes) == 16 * MiB);
}

TEST_CASE("the first and last megabytes, where other writers start, are visited last") {
    Harness h(std::vector<char>(64 * MiB, 0), {.chunk_bytes = 4 * MiB, .queue_depth = 1});
    JobTarget target;
    target.last.add(0, 8 * MiB);
    target.last.add(56 * MiB, 64 * MiB);
    h.make(std::move(target));
    std::vector<uint64_t> reads;
    h.io->hook = [&](IoRequest& r) -> std::optional<int64_t> {
        if (r.op == IoOp::read)
            reads.push_back(r.offset);
        return std::nullopt;
    };
    REQUIRE(h.job->run().status == JobStatus::visited);
    REQUIRE(reads.size() == 16);
    CHECK(reads.front() == 8 * MiB);
    const std::vector<uint64_t> tail(reads.end() - 4, reads.end());
    CHECK(tail == std::vector<uint64_t>{0, 4 * MiB, 56 * MiB, 60 * MiB});
}
