#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <latch>
#include <thread>
#include <vector>

#include "base/io.hh"
#include "base/unique_fd.hh"
#include "cow_disk.hh"
#include "simulator.hh"
#include "temp_dir.hh"

using namespace cowsim;

namespace {

constexpr uint64_t KiB = 1024;
constexpr uint64_t MiB = 1024 * KiB;

BackendConfig instant() {
    BackendConfig config;
    config.alloc_latency = {};
    config.sync_latency = {};
    return config;
}

std::unique_ptr<CowDisk> make_disk(Backend& backend, const TempDir& dir, DiskConfig config) {
    if (config.name.empty())
        config.name = "xvdb";
    if (config.store_path.empty())
        config.store_path = dir.file(config.name + ".img");
    auto disk = CowDisk::open(config, backend);
    REQUIRE_MESSAGE(disk.ok(), (disk.ok() ? "" : disk.error().message));
    return std::move(*disk);
}

std::vector<char> read_back(CowDisk& disk, uint64_t offset, uint64_t len) {
    std::vector<char> buf(len, 'X');
    REQUIRE(disk.read(buf.data(), len, offset) == static_cast<int64_t>(len));
    return buf;
}

bool all_equal(const std::vector<char>& buf, char value) {
    return std::all_of(buf.begin(), buf.end(), [&](char c) { return c == value; });
}

} // namespace

TEST_CASE("a fresh disk reads zeros served as holes and allocates nothing") {
    TempDir dir;
    Backend backend(instant());
    auto disk = make_disk(backend, dir, {.size_bytes = 8 * MiB});
    CHECK(disk->blocks_total() == 4);
    CHECK(all_equal(read_back(*disk, 0, 8 * MiB), 0));
    const auto& c = disk->counters();
    CHECK(c.hole_bytes_read == 8 * MiB);
    CHECK(c.backend_bytes_read == 0);
    CHECK(c.blocks_allocated == 0);
    CHECK(disk->allocated_bytes() == 0);
}

TEST_CASE("the first write to a block writes the whole block; later writes their size") {
    TempDir dir;
    Backend backend(instant());
    auto disk = make_disk(backend, dir, {.size_bytes = 8 * MiB});
    const std::vector<char> data(KiB, 'a');

    REQUIRE(disk->write(data.data(), KiB, 2 * MiB + 4 * KiB) == KiB);
    const auto& c = disk->counters();
    CHECK(c.first_writes == 1);
    CHECK(c.blocks_allocated == 1);
    CHECK(c.backend_bytes_written == 2 * MiB);
    CHECK(disk->is_allocated(1));
    CHECK_FALSE(disk->is_allocated(0));

    REQUIRE(disk->write(data.data(), KiB, 2 * MiB + 8 * KiB) == KiB);
    CHECK(c.first_writes == 1);
    CHECK(c.backend_bytes_written == 2 * MiB + KiB);
    CHECK(c.link_bytes_written == 2 * MiB + KiB); // the block crossed the link

    const auto block = read_back(*disk, 2 * MiB, 2 * MiB);
    CHECK(std::count(block.begin(), block.end(), 'a') == 2 * KiB);
    CHECK(block[4 * KiB] == 'a');
    CHECK(block[4 * KiB - 1] == 0);
    CHECK(block[5 * KiB] == 0);
    CHECK(c.backend_bytes_read == 2 * MiB);
}

TEST_CASE("host allocation: the block is allocated all the same, the link carries the write") {
    TempDir dir;
    auto config = instant();
    config.host_allocation = true;
    Backend backend(config);
    auto disk = make_disk(backend, dir, {.size_bytes = 8 * MiB});
    const std::vector<char> data(4 * KiB, 'a');
    REQUIRE(disk->write(data.data(), 4 * KiB, 2 * MiB) == 4 * KiB);
    const auto& c = disk->counters();
    CHECK(c.blocks_allocated == 1);
    CHECK(c.backend_bytes_written == 2 * MiB); // the storage host wrote the block
    CHECK(c.link_bytes_written == 4 * KiB);    // the VM sent its 4 KiB
    REQUIRE(disk->write(data.data(), 4 * KiB, 2 * MiB + 64 * KiB) == 4 * KiB);
    CHECK(c.link_bytes_written == 8 * KiB);
    const auto block = read_back(*disk, 2 * MiB, 2 * MiB);
    CHECK(std::count(block.begin(), block.end(), 'a') == 8 * KiB);
}

TEST_CASE("a write across a block boundary allocates both blocks") {
    TempDir dir;
    Backend backend(instant());
    auto disk = make_disk(backend, dir, {.size_bytes = 8 * MiB});
    const std::vector<char> data(8 * KiB, 'b');
    REQUIRE(disk->write(data.data(), data.size(), 2 * MiB - 4 * KiB) == 8 * KiB);
    CHECK(disk->counters().first_writes == 2);
    CHECK(disk->is_allocated(0));
    CHECK(disk->is_allocated(1));
    CHECK(all_equal(read_back(*disk, 2 * MiB - 4 * KiB, 8 * KiB), 'b'));
}

TEST_CASE("allocations survive reopening the store") {
    TempDir dir;
    Backend backend(instant());
    const std::vector<char> data(4 * KiB, 'c');
    {
        auto disk = make_disk(backend, dir, {.size_bytes = 16 * MiB, .block_bytes = 64 * KiB});
        REQUIRE(disk->write(data.data(), data.size(), 0) == 4 * KiB);
        REQUIRE(disk->write(data.data(), data.size(), 10 * MiB + 100 * KiB) == 4 * KiB);
    }
    Backend again(instant());
    auto disk = make_disk(again, dir, {.size_bytes = 16 * MiB, .block_bytes = 64 * KiB});
    CHECK(disk->counters().blocks_allocated == 2);
    CHECK(disk->counters().first_writes == 0);
    CHECK(disk->is_allocated(0));
    CHECK(disk->is_allocated((10 * MiB + 100 * KiB) / (64 * KiB)));
    CHECK(again.used_bytes() == 128 * KiB);
    CHECK(all_equal(read_back(*disk, 10 * MiB + 100 * KiB, 4 * KiB), 'c'));
}

TEST_CASE("a store of another size is refused") {
    TempDir dir;
    Backend backend(instant());
    { make_disk(backend, dir, {.size_bytes = 4 * MiB}); }
    DiskConfig config{.name = "xvdb", .size_bytes = 8 * MiB, .store_path = dir.file("xvdb.img")};
    const auto r = CowDisk::open(config, backend);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("holds a disk of 4194304 bytes") != std::string::npos);
}

TEST_CASE("invalid geometry is refused") {
    TempDir dir;
    Backend backend(instant());
    const auto store = dir.file("x.img");
    CHECK_FALSE(CowDisk::open({.name = "x", .size_bytes = 1000, .store_path = store}, backend));
    CHECK_FALSE(CowDisk::open(
        {.name = "x", .size_bytes = MiB, .block_bytes = 6000, .store_path = store}, backend));
    CHECK_FALSE(CowDisk::open(
        {.name = "x", .size_bytes = MiB, .block_bytes = 128 * MiB, .store_path = store}, backend));
}

TEST_CASE("an odd tail: the last block is short and writes stop at the end") {
    TempDir dir;
    Backend backend(instant());
    const uint64_t size = 4 * MiB + 3 * 512;
    auto disk = make_disk(backend, dir, {.size_bytes = size});
    CHECK(disk->blocks_total() == 3);
    const std::vector<char> data(4 * KiB, 'd');
    CHECK(disk->write(data.data(), data.size(), size - 512) == 512); // cut short
    CHECK(disk->allocated_bytes() == 3 * 512);
    CHECK(disk->counters().backend_bytes_written == 3 * 512);
    CHECK(disk->write(data.data(), data.size(), size) == -ENOSPC);
    std::vector<char> buf(4 * KiB);
    CHECK(disk->read(buf.data(), buf.size(), size - 1024) == 1024);
    CHECK(disk->read(buf.data(), buf.size(), size) == 0);
}

TEST_CASE("a clone reads its parent and copies a block up on first write") {
    TempDir dir;
    const auto parent_path = dir.file("parent.img");
    {
        std::vector<char> image(3 * MiB, 'p'); // shorter than the disk: the rest is zeros
        prewarmd::UniqueFd fd(::open(parent_path.c_str(), O_WRONLY | O_CREAT, 0600));
        REQUIRE(prewarmd::pwrite_full(fd.get(), image.data(), image.size(), 0).ok());
    }
    Backend backend(instant());
    auto disk = make_disk(backend, dir, {.size_bytes = 8 * MiB, .parent_path = parent_path});

    CHECK(all_equal(read_back(*disk, 0, 3 * MiB), 'p'));
    CHECK(all_equal(read_back(*disk, 3 * MiB, 5 * MiB), 0));
    CHECK(disk->counters().parent_bytes_read == 8 * MiB);
    CHECK(disk->counters().hole_bytes_read == 0);

    const std::vector<char> data(KiB, 'n');
    REQUIRE(disk->write(data.data(), KiB, MiB) == KiB);
    CHECK(disk->is_allocated(0));
    CHECK(disk->counters().backend_bytes_written == 2 * MiB);
    const auto block = read_back(*disk, 0, 2 * MiB);
    CHECK(std::count(block.begin(), block.end(), 'n') == KiB);
    CHECK(std::count(block.begin(), block.end(), 'p') == 2 * MiB - KiB);
}

TEST_CASE("bitmap mode: writes to never-written sectors pay a metadata sync") {
    TempDir dir;
    Backend backend(instant());
    auto disk = make_disk(backend, dir, {.size_bytes = 4 * MiB, .sector_bitmap = true});
    const std::vector<char> data(2 * MiB, 'e');
    const auto& c = disk->counters();

    REQUIRE(disk->write(data.data(), 512, 0) == 512);
    CHECK(c.first_writes == 1);
    CHECK(c.meta_syncs == 0); // the allocation carries its own metadata
    CHECK(disk->unwritten_sectors(0) == 4095);

    REQUIRE(disk->write(data.data(), 1024, 512) == 1024); // new sectors
    CHECK(c.meta_syncs == 1);
    REQUIRE(disk->write(data.data(), 1024, 512) == 1024); // the same again
    CHECK(c.meta_syncs == 1);
    REQUIRE(disk->write(data.data(), 1, 1536) == 1); // part of a new sector
    CHECK(c.meta_syncs == 2);
    CHECK(disk->unwritten_sectors(0) == 4092);

    REQUIRE(disk->write(data.data(), 2 * MiB, 0) == 2 * MiB); // fills the block
    CHECK(c.meta_syncs == 3);
    CHECK(disk->unwritten_sectors(0) == 0);
    REQUIRE(disk->write(data.data(), 4096, 4096) == 4096);
    CHECK(c.meta_syncs == 3);

    REQUIRE(disk->write(data.data(), 2 * MiB, 2 * MiB) == 2 * MiB); // whole block at once
    CHECK(disk->unwritten_sectors(1) == 0);
    CHECK(c.meta_syncs == 3);
}

TEST_CASE("a full backend fails new allocations with ENOSPC, not rewrites") {
    TempDir dir;
    BackendConfig config = instant();
    config.capacity_bytes = 2 * MiB;
    Backend backend(config);
    auto disk = make_disk(backend, dir, {.size_bytes = 8 * MiB});
    const std::vector<char> data(4 * KiB, 'f');
    CHECK(disk->write(data.data(), data.size(), 0) == 4 * KiB);
    CHECK(disk->write(data.data(), data.size(), 2 * MiB) == -ENOSPC);
    CHECK(disk->write(data.data(), data.size(), 8 * KiB) == 4 * KiB);
    CHECK(backend.used_bytes() == 2 * MiB);
    backend.set_capacity(0);
    CHECK(disk->write(data.data(), data.size(), 2 * MiB) == 4 * KiB);
}

TEST_CASE("injected faults fail the matching operations only") {
    TempDir dir;
    Simulator sim(instant());
    REQUIRE(
        sim.add_disk({.name = "xvdb", .size_bytes = 8 * MiB, .store_path = dir.file("b")}).ok());
    auto& disk = *sim.find("xvdb");
    REQUIRE(sim.control("fail write xvdb range=1MiB+4KiB\nfail read xvdb range=3MiB+512 "
                        "errno=enxio")
                .ok());
    std::vector<char> buf(4 * KiB, 'g');
    CHECK(disk.write(buf.data(), buf.size(), 0) == 4 * KiB);
    CHECK(disk.write(buf.data(), buf.size(), MiB) == -EIO);
    CHECK(disk.read(buf.data(), buf.size(), MiB) == 4 * KiB);
    CHECK(disk.read(buf.data(), buf.size(), 3 * MiB) == -ENXIO);
    CHECK(disk.counters().faults_injected == 2);

    REQUIRE(sim.control("vanish xvdb").ok());
    CHECK(disk.read(buf.data(), buf.size(), 0) == -ENODEV);
    CHECK(disk.write(buf.data(), buf.size(), 0) == -ENODEV);
    REQUIRE(sim.control("appear xvdb\nclear xvdb").ok());
    CHECK(disk.write(buf.data(), buf.size(), MiB) == 4 * KiB);
}

TEST_CASE("control commands for an unknown disk apply nothing") {
    TempDir dir;
    Simulator sim(instant());
    REQUIRE(sim.add_disk({.name = "xvdb", .size_bytes = MiB, .store_path = dir.file("b")}).ok());
    const auto r = sim.control("fail write xvdb\nfail write xvdz");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("xvdz") != std::string::npos);
    CHECK(sim.find("xvdb")->faults().size() == 0);
}

TEST_CASE("stats report every disk's counters") {
    TempDir dir;
    Simulator sim(instant());
    REQUIRE(
        sim.add_disk({.name = "xvdb", .size_bytes = 4 * MiB, .store_path = dir.file("b")}).ok());
    REQUIRE(sim.add_disk({.name = "xvdc",
                          .size_bytes = 4 * MiB,
                          .block_bytes = 64 * KiB,
                          .store_path = dir.file("c")})
                .ok());
    CHECK_FALSE(sim.add_disk({.name = "xvdb", .size_bytes = MiB, .store_path = dir.file("d")}));
    CHECK_FALSE(sim.add_disk({.name = ".control", .size_bytes = MiB, .store_path = dir.file("e")}));
    std::vector<char> buf(4 * KiB, 'h');
    REQUIRE(sim.find("xvdc")->write(buf.data(), buf.size(), 0) == 4 * KiB);
    const auto stats = sim.stats();
    CHECK(stats["disks"]["xvdb"]["blocks_allocated"] == 0);
    CHECK(stats["disks"]["xvdc"]["blocks_allocated"] == 1);
    CHECK(stats["disks"]["xvdc"]["blocks_total"] == 64);
    CHECK(stats["disks"]["xvdc"]["backend_bytes_written"] == 64 * KiB);
    CHECK(stats["disks"]["xvdc"]["writes"] == 1);
    CHECK(stats["backend"]["used_bytes"] == 64 * KiB);
}

namespace {
uint64_t store_bytes(const std::string& path) {
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    return static_cast<uint64_t>(st.st_blocks) * 512;
}
} // namespace

TEST_CASE("zeros are charged as written but never stored") {
    TempDir dir;
    Backend backend(instant());
    const std::vector<char> zeros(4 * MiB, 0);
    {
        auto disk = make_disk(backend, dir, {.size_bytes = 64 * MiB});
        REQUIRE(disk->write(zeros.data(), zeros.size(), 0) == 4 * MiB);
        REQUIRE(disk->write(zeros.data(), KiB, 10 * MiB) == KiB);
        CHECK(disk->counters().blocks_allocated == 3);
        CHECK(disk->counters().backend_bytes_written == 6 * MiB);
        CHECK(store_bytes(dir.file("xvdb.img")) == 0);
    }
    Backend again(instant());
    auto disk = make_disk(again, dir, {.size_bytes = 64 * MiB});
    CHECK(disk->counters().blocks_allocated == 3); // from the map
    CHECK(disk->is_allocated(5));
    CHECK_FALSE(disk->is_allocated(4));
}

TEST_CASE("zeros written over data read back as zeros") {
    TempDir dir;
    Backend backend(instant());
    auto disk = make_disk(backend, dir, {.size_bytes = 8 * MiB});
    const std::vector<char> data(MiB, 'z');
    const std::vector<char> zeros(MiB, 0);
    REQUIRE(disk->write(data.data(), data.size(), 0) == MiB);
    CHECK(store_bytes(dir.file("xvdb.img")) >= MiB);
    REQUIRE(disk->write(zeros.data(), 100 * KiB + 512, 4 * KiB + 512) == 100 * KiB + 512);
    const auto back = read_back(*disk, 0, MiB);
    CHECK(std::count(back.begin(), back.end(), 0) == 100 * KiB + 512);
    CHECK(back[4 * KiB + 511] == 'z');
    CHECK(back[4 * KiB + 512] == 0);
    CHECK(back[104 * KiB + 1023] == 0);
    CHECK(back[104 * KiB + 1024] == 'z');
}

TEST_CASE("a store made elsewhere, without a map, counts its data as allocated") {
    TempDir dir;
    const auto store = dir.file("image.img");
    {
        prewarmd::UniqueFd fd(::open(store.c_str(), O_WRONLY | O_CREAT, 0600));
        REQUIRE(::ftruncate(fd.get(), 16 * MiB) == 0);
        const std::vector<char> data(4 * KiB, 'i');
        REQUIRE(prewarmd::pwrite_full(fd.get(), data.data(), data.size(), 5 * MiB).ok());
    }
    Backend backend(instant());
    auto disk = make_disk(backend, dir, {.size_bytes = 16 * MiB, .store_path = store});
    CHECK(disk->counters().blocks_allocated == 1);
    CHECK(disk->is_allocated(2));
}

TEST_CASE("a map that does not fit the disk is refused") {
    TempDir dir;
    Backend backend(instant());
    { make_disk(backend, dir, {.size_bytes = 64 * MiB}); }
    const auto r = CowDisk::open({.name = "xvdb",
                                  .size_bytes = 64 * MiB,
                                  .block_bytes = 64 * KiB,
                                  .store_path = dir.file("xvdb.img")},
                                 backend);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("map") != std::string::npos);
}

TEST_CASE("detect-zeroes: zero writes allocate nothing; under unmap a block they cover goes") {
    TempDir dir;
    Backend backend(instant());
    const std::vector<char> zeros(2 * MiB, 0), data(4 * KiB, 'a');

    auto on = make_disk(backend, dir, {.name = "on", .size_bytes = 8 * MiB, .zeroes = Zeroes::on});
    REQUIRE(on->write(zeros.data(), 2 * MiB, 0) == static_cast<int64_t>(2 * MiB));
    CHECK(on->counters().blocks_allocated == 0);
    CHECK(on->counters().zero_bytes_dropped == 2 * MiB);
    CHECK(on->counters().backend_bytes_written == 0);
    REQUIRE(on->write(data.data(), 4 * KiB, 0) == static_cast<int64_t>(4 * KiB));
    CHECK(on->counters().blocks_allocated == 1); // data allocates as ever
    REQUIRE(on->write(zeros.data(), 2 * MiB, 0) == static_cast<int64_t>(2 * MiB));
    CHECK(on->is_allocated(0)); // on: an allocated block stays
    CHECK(all_equal(read_back(*on, 0, 2 * MiB), 0));

    auto unmap = make_disk(backend, dir,
                           {.name = "unmap", .size_bytes = 8 * MiB, .zeroes = Zeroes::unmap});
    REQUIRE(unmap->write(data.data(), 4 * KiB, 2 * MiB) == static_cast<int64_t>(4 * KiB));
    REQUIRE(unmap->write(zeros.data(), 4 * KiB, 2 * MiB) == static_cast<int64_t>(4 * KiB));
    CHECK(unmap->is_allocated(1)); // part of a block: zeros written into it
    REQUIRE(unmap->write(zeros.data(), 2 * MiB, 2 * MiB) == static_cast<int64_t>(2 * MiB));
    CHECK_FALSE(unmap->is_allocated(1)); // the whole block: given back
    CHECK(unmap->counters().blocks_unmapped == 1);
    CHECK(unmap->counters().blocks_allocated == 0);
    CHECK(all_equal(read_back(*unmap, 2 * MiB, 2 * MiB), 0));
}

TEST_CASE("allocations=1: one new block at a time, as tapdisk's VHD; the rest wait, none fails") {
    TempDir dir;
    BackendConfig config = instant();
    config.alloc_latency = std::chrono::milliseconds(50);
    Backend backend(config);
    auto disk =
        make_disk(backend, dir, {.name = "vhd", .size_bytes = 16 * MiB, .allocations = 1});
    std::latch start(8);
    std::vector<std::thread> writers;
    std::vector<int64_t> results(8);
    for (int i = 0; i < 8; ++i)
        writers.emplace_back([&, i] {
            const std::vector<char> data(64 * KiB, static_cast<char>('a' + i));
            start.arrive_and_wait();
            results[i] = disk->write(data.data(), data.size(), i * 2 * MiB + 64 * KiB);
        });
    for (auto& writer : writers)
        writer.join();
    for (int i = 0; i < 8; ++i) {
        CHECK(results[i] == static_cast<int64_t>(64 * KiB));
        CHECK(all_equal(read_back(*disk, i * 2 * MiB + 64 * KiB, 64 * KiB), 'a' + i));
        CHECK(all_equal(read_back(*disk, i * 2 * MiB, 64 * KiB), 0));
    }
    CHECK(disk->counters().blocks_allocated == 8);
    CHECK(disk->counters().allocations_in_flight_peak == 1);
    // Eight writers released at once against 50 ms allocations: they queue.
    CHECK(disk->counters().allocation_waits > 0);
    // Writes into an allocated block never wait.
    const uint64_t waits = disk->counters().allocation_waits;
    const std::vector<char> more(4 * KiB, 'z');
    REQUIRE(disk->write(more.data(), more.size(), 0) == static_cast<int64_t>(4 * KiB));
    CHECK(disk->counters().allocation_waits == waits);
}
