#include <doctest/doctest.h>

#include "options.hh"

using namespace cowsim;
using namespace std::chrono_literals;

TEST_CASE("cowsim options: disks take global defaults and their own overrides") {
    const auto r = parse_options({"--store-dir",
                                  "/s",
                                  "--block-size=4MiB",
                                  "--bitmap",
                                  "-d",
                                  "xvdb=8GiB",
                                  "--disk",
                                  "xvdc=1TiB,block=64KiB,bitmap=off,zeroes=unmap,allocations=1",
                                  "-d",
                                  "clone=1GiB,parent=/img/base,store=/x/clone.img",
                                  "--alloc-latency",
                                  "3ms",
                                  "--sync-latency=500us",
                                  "--bandwidth",
                                  "200MiB/s",
                                  "--concurrency",
                                  "4",
                                  "--capacity",
                                  "2TiB",
                                  "/mnt"});
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
    CHECK(r->mountpoint == "/mnt");
    REQUIRE(r->disks.size() == 3);
    CHECK(r->disks[0].name == "xvdb");
    CHECK(r->disks[0].size_bytes == 8ULL << 30);
    CHECK(r->disks[0].block_bytes == 4ULL << 20);
    CHECK(r->disks[0].sector_bitmap);
    CHECK(r->disks[0].store_path == "/s/xvdb.img");
    CHECK(r->disks[1].block_bytes == 64 * 1024);
    CHECK_FALSE(r->disks[1].sector_bitmap);
    CHECK(r->disks[1].zeroes == Zeroes::unmap);
    CHECK(r->disks[0].zeroes == Zeroes::off);
    CHECK(r->disks[1].allocations == 1);
    CHECK(r->disks[0].allocations == 0);
    CHECK(r->disks[2].parent_path == "/img/base");
    CHECK(r->disks[2].store_path == "/x/clone.img");
    CHECK(r->backend.alloc_latency == 3ms);
    CHECK(r->backend.sync_latency == 500us);
    CHECK(r->backend.bandwidth_bytes_per_s == 200ULL << 20);
    CHECK(r->backend.concurrency == 4);
    CHECK(r->backend.capacity_bytes == 2ULL << 40);
}

TEST_CASE("cowsim options: defaults") {
    const auto r = parse_options({"-s", "/s", "-d", "a=1MiB", "/m"});
    REQUIRE(r.ok());
    CHECK(r->disks[0].block_bytes == 2 * 1024 * 1024);
    CHECK_FALSE(r->disks[0].sector_bitmap);
    CHECK(r->backend.alloc_latency == 1ms);
    CHECK(r->backend.sync_latency == 2ms);
    CHECK(r->backend.bandwidth_bytes_per_s == 0);
    CHECK(r->backend.concurrency == 0);
    CHECK(r->threads == 16);
}

TEST_CASE("cowsim options: bad arguments say what is wrong") {
    struct Case {
        std::vector<std::string> args;
        const char* says;
    };
    const Case cases[] = {
        {{"-s", "/s", "-d", "a=1MiB"}, "MOUNTPOINT"},
        {{"-s", "/s", "/m"}, "--disk"},
        {{"-d", "a=1MiB", "/m"}, "--store-dir"},
        {{"-s", "/s", "-d", "a=12XB", "/m"}, "invalid size '12XB'"},
        {{"-s", "/s", "-d", "a", "/m"}, "NAME=SIZE"},
        {{"-s", "/s", "-d", "a=1MiB,colour=red", "/m"}, "unknown option 'colour=red'"},
        {{"-s", "/s", "-d", "a=1MiB,zeroes=yes", "/m"}, "zeroes is off, on or unmap"},
        {{"-s", "/s", "-d", "a=1MiB,allocations=0", "/m"}, "allocations is a count from 1"},
        {{"-s", "/s", "-d", "a=1MiB,allocations=1x", "/m"}, "allocations is a count from 1"},
        {{"-s", "/s", "-d", "a=1MiB", "--bandwidth", "200MiB", "/m"}, "--bandwidth"},
        {{"-s", "/s", "-d", "a=1MiB", "--concurrency", "0", "/m"}, "--concurrency"},
        {{"-s", "/s", "-d", "a=1MiB", "--alloc-latency", "3", "/m"}, "unit"},
        {{"-s", "/s", "-d", "a=1MiB", "--frobnicate", "/m"}, "unknown option '--frobnicate'"},
        {{"-s", "/s", "-d", "a=1MiB", "/m", "/n"}, "one MOUNTPOINT"},
        {{"-s", "/s", "-d", "a=1MiB", "--bitmap=yes", "/m"}, "takes no value"},
        {{"-s"}, "needs a value"},
    };
    for (const auto& c : cases) {
        const auto r = parse_options(c.args);
        CAPTURE(c.says);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().message.find(c.says) != std::string::npos);
    }
}
