#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "base/args.hh"
#include "base/crc32c.hh"
#include "base/range_set.hh"
#include "base/zero.hh"
#include "engine/checkpoint.hh"
#include "engine/plan.hh"
#include "engine/progress.hh"
#include "engine/token_bucket.hh"

using namespace prewarmd;
using namespace std::chrono_literals;

namespace {
constexpr uint64_t KiB = 1024;
constexpr uint64_t MiB = 1024 * KiB;
} // namespace

TEST_CASE("range sets merge, cover and total") {
    RangeSet s;
    s.add(10, 20);
    s.add(30, 40);
    CHECK(s.extents().size() == 2);
    s.add(20, 30); // joins them
    REQUIRE(s.extents().size() == 1);
    CHECK(s.extents()[0] == Extent{10, 30});
    s.add(0, 5);
    s.add(50, 60);
    s.add(4, 55); // swallows everything
    REQUIRE(s.extents().size() == 1);
    CHECK(s.extents()[0] == Extent{0, 60});
    CHECK(s.covers(0, 60));
    CHECK_FALSE(s.covers(59, 61));
    s.add(100, 110);
    CHECK(s.total_bytes() == 70);
    CHECK_FALSE(s.covers(60, 100));
    CHECK(s.next_after(60)->offset == 100);
    CHECK(s.next_after(110) == nullptr);
}

TEST_CASE("the chunk size is a multiple of the backend block and the optimal I/O size") {
    Geometry g{.size_bytes = 8ULL << 30, .logical_block_bytes = 512, .dio_align_bytes = 512};
    CHECK(*choose_chunk_bytes(4 * MiB, false, 2 * MiB, g) == 4 * MiB);
    g.optimal_io_bytes = 3 * MiB;
    CHECK(*choose_chunk_bytes(4 * MiB, false, 2 * MiB, g) == 6 * MiB); // grown to fit both
    const auto explicit_bad = choose_chunk_bytes(4 * MiB, true, 2 * MiB, g);
    REQUIRE_FALSE(explicit_bad.ok());
    CHECK(explicit_bad.error().message.find("optimal I/O size") != std::string::npos);
    g.optimal_io_bytes = 0;
    CHECK_FALSE(choose_chunk_bytes(3 * MiB, true, 2 * MiB, g).ok());
    CHECK_FALSE(choose_chunk_bytes(128 * MiB, true, 2 * MiB, g).ok());
    CHECK(*choose_chunk_bytes(64 * KiB, true, 64 * KiB, g) == 64 * KiB);
    g.logical_block_bytes = g.dio_align_bytes = 4096;
    g.size_bytes = 8 * MiB + 512;
    const auto odd = choose_chunk_bytes(4 * MiB, false, 2 * MiB, g);
    REQUIRE_FALSE(odd.ok());
    CHECK(odd.error().message.find("not a multiple of the logical block size") !=
          std::string::npos);
}

TEST_CASE("a chunk grown for the device takes fewer in flight: the buffers stay as set") {
    CHECK(fit_queue_depth(8, 4 * MiB, 4 * MiB) == 8);
    CHECK(fit_queue_depth(8, 4 * MiB, 6 * MiB) == 5);  // 30 MiB, within 32 MiB
    CHECK(fit_queue_depth(2, 4 * MiB, 64 * MiB) == 0); // one chunk alone is more: refused
}

TEST_CASE("the plan cuts regions at chunk multiples and skips what is done") {
    RangeSet regions;
    regions.add(0, 10 * MiB + 512);
    RangeSet done;
    done.add(4 * MiB, 8 * MiB); // chunk 1 done
    done.add(8 * MiB, 9 * MiB); // chunk 2 only partly: visited again
    ChunkPlan plan(regions, 4 * MiB, done);
    CHECK(plan.total_bytes() == 10 * MiB + 512);
    CHECK(plan.done_bytes() == 5 * MiB);
    CHECK(*plan.next() == Extent{0, 4 * MiB});
    CHECK(*plan.next() == Extent{8 * MiB, 2 * MiB + 512});
    CHECK_FALSE(plan.next());
}

TEST_CASE("a sparse queue: one piece per backend block, standing for the block") {
    RangeSet regions;
    regions.add(0, 10 * MiB + 512 * KiB); // the last block is short
    RangeSet done;
    done.add(2 * MiB, 4 * MiB); // one block done
    RangeSet last;
    last.add(0, 2 * MiB); // where writers start: last
    SparseQueue q(regions, 2 * MiB, 4 * KiB, done, last);
    CHECK(q.total_bytes() == 10 * MiB + 512 * KiB);
    CHECK(q.resumed_bytes() == 2 * MiB);
    std::vector<uint64_t> starts;
    while (const Extent* e = q.peek()) {
        CHECK(e->length == 4 * KiB);
        starts.push_back(e->offset);
        q.take();
    }
    CHECK(starts == std::vector<uint64_t>{4 * MiB, 6 * MiB, 8 * MiB, 10 * MiB, 0});
    CHECK(q.covered({4 * MiB, 4 * KiB}) == Extent{4 * MiB, 2 * MiB});
    CHECK(q.covered({10 * MiB, 4 * KiB}) == Extent{10 * MiB, 512 * KiB});
    q.again({6 * MiB, 4 * KiB});
    REQUIRE(q.peek());
    CHECK(q.peek()->offset == 6 * MiB);
    q.take();
    CHECK(q.exhausted());
}

TEST_CASE("a file's holes are its regions, trimmed to the direct I/O alignment") {
    Geometry g{.size_bytes = 20 * MiB, .dio_align_bytes = 4096};
    RangeSet data;
    data.add(MiB + 100, 2 * MiB);
    data.add(5 * MiB, 6 * MiB);
    const auto regions = regions_to_visit(g, data);
    REQUIRE(regions.extents().size() == 3);
    CHECK(regions.extents()[0] == Extent{0, MiB}); // 100 bytes short of the data: trimmed
    CHECK(regions.extents()[1] == Extent{2 * MiB, 3 * MiB});
    CHECK(regions.extents()[2] == Extent{6 * MiB, 14 * MiB});
    // Chunks never cross a chunk boundary, even inside a hole.
    ChunkPlan plan(regions, 4 * MiB, RangeSet{});
    CHECK(*plan.next() == Extent{0, MiB});
    CHECK(*plan.next() == Extent{2 * MiB, 2 * MiB});
    CHECK(*plan.next() == Extent{4 * MiB, MiB});
    CHECK(*plan.next() == Extent{6 * MiB, 2 * MiB});
}

TEST_CASE("the token bucket turns bytes into start times") {
    const auto t0 = Clock::time_point{} + 1000s;
    TokenBucket bucket(100 * MiB, 4 * MiB, t0);
    CHECK(bucket.ready_at(t0, 4 * MiB) == t0); // a full burst at first
    bucket.take(t0, 4 * MiB);
    const auto next = bucket.ready_at(t0, 4 * MiB);
    CHECK(next - t0 >= 40ms);
    CHECK(next - t0 <= 41ms); // 4 MiB at 100 MiB/s
    // Over many chunks the rate is the rate.
    auto t = t0;
    for (int i = 0; i < 250; ++i) {
        t = bucket.ready_at(t, 4 * MiB);
        bucket.take(t, 4 * MiB);
    }
    const double seconds = std::chrono::duration<double>(t - t0).count();
    CHECK(seconds == doctest::Approx(250 * 4.0 / 100).epsilon(0.01));
    // A chunk bigger than the burst waits for a full bucket, then runs into debt.
    TokenBucket small(MiB, 64 * KiB, t0);
    small.take(t0, 4 * MiB);
    const auto after_debt = small.ready_at(t0, 4 * MiB);
    CHECK(after_debt - t0 >= 4000ms);
    // Unlimited never waits; a new rate applies at once.
    TokenBucket free(0, 0, t0);
    CHECK(free.ready_at(t0, 1ULL << 40) == t0);
    bucket.set_rate(0, 0, t);
    CHECK(bucket.ready_at(t, 4 * MiB) == t);
}

TEST_CASE("checkpoints round-trip and damage is caught") {
    Checkpoint c{.identity = "xen-51728-8589934592", .size_bytes = 8ULL << 30, .mode = "zero"};
    c.done.add(0, 400 * MiB);
    c.done.add(404 * MiB, 408 * MiB);
    c.written_bytes = 12;
    c.skipped_bytes = 34;
    const auto text = format_checkpoint(c);
    CHECK(text.rfind("prewarmd-checkpoint 1 crc32c=", 0) == 0);
    const auto back = parse_checkpoint(text);
    REQUIRE(back.ok());
    CHECK(back->identity == c.identity);
    CHECK(back->done.extents() == c.done.extents());
    CHECK(back->skipped_bytes == 34);

    for (size_t at : {size_t{3}, size_t{40}, text.size() / 2, text.size() - 3}) {
        CAPTURE(at);
        auto damaged = text;
        damaged[at] ^= 1;
        const auto r = parse_checkpoint(damaged);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().err == -EBADMSG);
    }
    CHECK_FALSE(parse_checkpoint(text.substr(0, text.size() - 10)).ok());
    CHECK_FALSE(parse_checkpoint("").ok());

    // A well-formed file whose ranges lie outside the disk is not trusted either.
    Checkpoint outside = c;
    outside.size_bytes = MiB;
    const auto r = parse_checkpoint(format_checkpoint(outside));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("outside the disk") != std::string::npos);
}

TEST_CASE("crc32c matches the standard check value") {
    CHECK(crc32c("123456789") == 0xE3069283u);
    CHECK(crc32c("") == 0);
}

TEST_CASE("the zero check finds any non-zero byte") {
    std::vector<char> buf(4 * MiB, 0);
    CHECK(is_all_zero(buf.data(), buf.size()));
    CHECK(is_all_zero(buf.data(), 0));
    for (size_t at :
         {size_t{0}, size_t{15}, size_t{16}, size_t{17}, buf.size() / 2, buf.size() - 1}) {
        CAPTURE(at);
        buf[at] = 1;
        CHECK_FALSE(is_all_zero(buf.data(), buf.size()));
        buf[at] = 0;
    }
    buf[3] = 7;
    CHECK_FALSE(is_all_zero(buf.data(), 8));
}

TEST_CASE("the rate window averages over its span") {
    const auto t0 = Clock::time_point{} + 50s;
    RateWindow w(t0);
    for (int i = 0; i < 100; ++i) // 1 MiB every 100 ms for 10 s: 10 MiB/s
        w.add(t0 + i * 100ms + 50ms, MiB);
    const auto end = t0 + 10s;
    CHECK(w.rate(end, 10s) == doctest::Approx(10.0 * MiB).epsilon(0.02));
    CHECK(w.rate(end, 1s) == doctest::Approx(10.0 * MiB).epsilon(0.02));
    // Nothing for 5 s: the 1 s window is empty, the 10 s window halved.
    CHECK(w.rate(end + 5s, 1s) == 0);
    CHECK(w.rate(end + 5s, 10s) == doctest::Approx(5.0 * MiB).epsilon(0.05));
    // A young job is averaged over its life, not over the whole window.
    RateWindow young(t0);
    young.add(t0 + 200ms, 2 * MiB);
    CHECK(young.rate(t0 + 500ms, 10s) == doctest::Approx(4.0 * MiB).epsilon(0.01));
}

TEST_CASE("latency percentiles are within the histogram's resolution") {
    LatencyHistogram h;
    for (int ms = 1; ms <= 100; ++ms)
        h.record(std::chrono::milliseconds(ms));
    const auto s = h.summary();
    CHECK(s.count == 100);
    CHECK(s.max == 100000us);
    const auto close = [](std::chrono::microseconds got, double want_ms) {
        const double ms = static_cast<double>(got.count()) / 1000.0;
        return ms >= want_ms && ms <= want_ms * 1.125 + 0.001;
    };
    CHECK(close(s.p50, 50));
    CHECK(close(s.p90, 90));
    CHECK(close(s.p99, 99));
    CHECK(h.count_at_or_under(10ms) >= 9);
    CHECK(h.count_at_or_under(10ms) <= 10);
    CHECK(LatencyHistogram{}.summary().p99 == 0us);
}

TEST_CASE("the progress snapshot renders as JSON") {
    ProgressSnapshot s;
    s.status = JobStatus::running;
    s.total_bytes = 100;
    s.done_bytes = 25;
    s.eta = 7s;
    const nlohmann::json j = s;
    CHECK(j["state"] == "running");
    CHECK(j["progress_ratio"] == doctest::Approx(0.25));
    CHECK(j["eta_seconds"] == 7);
    s.eta.reset();
    CHECK(nlohmann::json(s)["eta_seconds"].is_null());
}

TEST_CASE("arguments: options from a table") {
    constexpr OptionSpec specs[] = {
        {"rate", 'r', "RATE", "how fast"},
        {"json", 0, "", "as JSON"},
        {"disk", 'd', "SPEC", "a disk\nrepeatable"},
    };
    const auto r = parse_args(
        {"--rate", "5MiB/s", "-d", "a", "x", "--disk=b", "--json", "--", "--not-an-option"}, specs);
    REQUIRE(r.ok());
    CHECK(*r->value("rate") == "5MiB/s");
    CHECK(r->has("json"));
    CHECK(r->values("disk") == std::vector<std::string>{"a", "b"});
    CHECK(r->positional == std::vector<std::string>{"x", "--not-an-option"});
    CHECK_FALSE(r->value("missing"));
    CHECK(parse_args({"--rate"}, specs).error().message.find("needs a value") != std::string::npos);
    CHECK(parse_args({"--json=1"}, specs).error().message.find("takes no value") !=
          std::string::npos);
    CHECK(parse_args({"-x"}, specs).error().message.find("unknown option '-x'") !=
          std::string::npos);
    const auto help = options_help(specs);
    CHECK(help.find("  -r, --rate RATE  how fast\n") != std::string::npos);
    CHECK(help.find("\n                   repeatable\n") != std::string::npos);
}
