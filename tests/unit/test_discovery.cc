#include <doctest/doctest.h>

#include "discovery/identity.hh"
#include "discovery/match.hh"
#include "discovery/tracker.hh"
#include "udev_fixture.hh"

using namespace prewarmd;

namespace {

std::vector<MatchRule> rules(std::initializer_list<std::string> texts) {
    auto parsed = parse_match_rules(texts);
    REQUIRE_MESSAGE(parsed.ok(), (parsed.ok() ? "" : parsed.error().message));
    return *parsed;
}

MatchDecision decide(const DiskInfo& disk, std::initializer_list<std::string> match,
                     std::initializer_list<std::string> exclude = {}, ProtectedDisks p = {}) {
    return decide_match(disk, rules(match), rules(exclude), p);
}

} // namespace

TEST_CASE("the xen class: Xen vbd disks, by their parent on the xen bus") {
    for (const auto* name :
         {"xen-xvda-root.txt", "xen-xvdb-blank.txt", "xen-xvdc-idpath.txt", "xen-ec2-xvdf.txt"}) {
        CAPTURE(name);
        const auto disk = load_udev_fixture(name);
        CHECK(is_xen_disk(disk));
        CHECK(decide(disk, {"xen"}).matched);
    }
    // dom0-loop0-blkback.txt: what a Xen host (dom0) sees of a raw disk it serves,
    // never a guest's disk.
    for (const auto* name :
         {"virtio-vdb.txt", "sata-sdc.txt", "loop3.txt", "dom0-loop0-blkback.txt"}) {
        CAPTURE(name);
        CHECK_FALSE(is_xen_disk(load_udev_fixture(name)));
        CHECK_FALSE(decide(load_udev_fixture(name), {"xen"}).matched);
    }
}

TEST_CASE("the xen class does not lean on ID_PATH or a serial, which stock udev lacks") {
    auto disk = load_udev_fixture("xen-xvdb-blank.txt");
    CHECK(disk.property("ID_PATH").empty());
    CHECK(disk.property("ID_SERIAL").empty());
    CHECK(*xen_vdev(disk) == 51728);
    // qcow2 through QEMU's qdisk backend: the same udev view (its dump has no size).
    const auto qdisk = load_udev_fixture("xen-xvdd-qdisk.txt");
    CHECK(is_xen_disk(qdisk));
    CHECK(*xen_vdev(qdisk) == 51760);
    // Only the parent's nodename left (no vbd- in the device path): still Xen.
    disk.devpath = "/devices/xen/somewhere/block/xvdb";
    CHECK(*xen_vdev(disk) == 51728);
    CHECK(is_xen_disk(disk));
}

TEST_CASE("partitions are never disks of their own") {
    const auto part = load_udev_fixture("xen-xvdb1-partition.txt");
    const auto d = decide(part, {"xen", "name:*"});
    CHECK_FALSE(d.matched);
    CHECK(d.reason.find("partition") != std::string::npos);
}

TEST_CASE("identity: the vbd number and size for Xen; WWN, serial, ID_PATH otherwise") {
    CHECK(disk_identity(load_udev_fixture("xen-xvdb-blank.txt")) == "xen-51728-2147483648");
    CHECK(disk_identity(load_udev_fixture("xen-xvdc-idpath.txt")) == "xen-51744-107374182400");
    CHECK(disk_identity(load_udev_fixture("sata-sdc.txt")) ==
          "wwn-0x50014ee2122965ae-4000787030016");
    CHECK(disk_identity(load_udev_fixture("virtio-vdb.txt")) ==
          "path-pci-0000_07_00.0-21474836480");
    CHECK(disk_identity(load_udev_fixture("loop3.txt")) ==
          "loop-_var_tmp_simdisk_mnt_xvdb-4294967296");
    CHECK(disk_identity(load_udev_fixture("xen-xvdb1-partition.txt")) ==
          "xen-51728-8588886016-part1");
}

TEST_CASE("identity follows the disk, not the kernel name") {
    auto first = load_udev_fixture("loop3.txt");
    auto again = first; // the same backing file attached again, as loop7
    again.name = "loop7";
    again.devnode = "/dev/loop7";
    again.devpath = "/devices/virtual/block/loop7";
    again.diskseq = 58;
    CHECK(disk_identity(again) == disk_identity(first));
    auto other = first; // another disk under the same name
    other.attributes["loop/backing_file"] = "/var/tmp/simdisk/mnt/xvdc";
    CHECK(disk_identity(other) != disk_identity(first));
    auto bigger = load_udev_fixture("xen-xvdb-blank.txt");
    const auto before = disk_identity(bigger);
    bigger.size_bytes *= 2; // another disk in the same slot
    CHECK(disk_identity(bigger) != before);
    CHECK(disk_identity(bigger).find_first_not_of(
              "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") ==
          std::string::npos);
}

TEST_CASE("match rules: name, id, id_path, serial, wwn, size") {
    const auto xvdc = load_udev_fixture("xen-xvdc-idpath.txt");
    const auto sdc = load_udev_fixture("sata-sdc.txt");
    CHECK(decide(xvdc, {"name:xvd[c-z]"}).matched);
    CHECK_FALSE(decide(xvdc, {"name:xvdb"}).matched);
    CHECK(decide(xvdc, {"id_path:xen-vbd-517*"}).matched);
    CHECK(decide(xvdc, {"id:xen-51744-*"}).matched);
    CHECK_FALSE(decide(xvdc, {"id:xen-51728-*"}).matched);
    CHECK(decide(sdc, {"serial:WDC_*"}).matched);
    CHECK(decide(sdc, {"wwn:0x50014ee2*"}).matched);
    CHECK_FALSE(decide(sdc, {"wwn:0x5000*"}).matched);
    CHECK(decide(xvdc, {"size:50GiB-200GiB"}).matched);
    CHECK(decide(xvdc, {"size:100GiB-"}).matched);
    CHECK_FALSE(decide(xvdc, {"size:-50GiB"}).matched);
    const auto d = decide(xvdc, {"name:xvdq", "xen"});
    CHECK(d.reason == "matches rule 'xen'");
}

TEST_CASE("exclude rules win, and protected disks are never matched") {
    const auto xvdb = load_udev_fixture("xen-xvdb-blank.txt");
    CHECK(decide(xvdb, {"xen"}, {"name:xvdb"}).reason == "excluded by rule 'name:xvdb'");
    ProtectedDisks root;
    root.root.insert("202:16");
    CHECK(decide(xvdb, {"xen", "name:*"}, {}, root).reason == "holds the root file system");
    ProtectedDisks swap;
    swap.swap.insert("202:16");
    CHECK(decide(xvdb, {"xen"}, {}, swap).reason == "holds active swap");
    ProtectedDisks boot;
    boot.boot.insert("202:16");
    CHECK(decide(xvdb, {"xen"}, {}, boot).reason == "holds /boot");
}

TEST_CASE("loop, RAM, dm, md and read-only disks need a rule that names them") {
    const auto loop = load_udev_fixture("loop3.txt");
    CHECK(decide(loop, {"xen", "size:1MiB-"}).reason ==
          "a loop device: considered only when a rule names it");
    CHECK(decide(loop, {"name:loop*"}).matched);
    CHECK(decide(loop, {"id:loop-_var_tmp_simdisk_*"}).matched);
    auto md = loop;
    md.name = "md0";
    CHECK(decide(md, {"size:-"}).reason.find("software RAID") != std::string::npos);
    auto ro = load_udev_fixture("xen-xvdb-blank.txt");
    ro.read_only = true;
    CHECK(decide(ro, {"xen"}).reason == "read-only: considered only when a rule names it");
    CHECK(decide(ro, {"name:xvdb"}).matched);
    auto empty = load_udev_fixture("xen-xvdb-blank.txt");
    empty.size_bytes = 0;
    CHECK_FALSE(decide(empty, {"xen"}).matched);
}

TEST_CASE("bad match rules are refused with the rule named") {
    for (const auto* text :
         {"zen", "name:", "size:10GiB", "size:2TiB-1TiB", "size:1XB-", "colour:red"}) {
        CAPTURE(text);
        const auto r = parse_match_rule(text);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().message.find(std::string("'") + text + "'") != std::string::npos);
    }
}

TEST_CASE("the tracker turns udev events into attach, change and detach") {
    DiskTracker t;
    auto loop = load_udev_fixture("loop3.txt");
    auto unattached = loop;
    unattached.size_bytes = 0;

    CHECK(t.on_uevent("present", unattached).empty()); // an idle loop device
    auto u = t.on_uevent("change", loop);              // losetup: change, size 0 -> N
    REQUIRE(u.size() == 1);
    CHECK(u[0].event == DiskTracker::Event::attached);
    CHECK(t.on_uevent("change", loop).empty()); // our own close after writing: no news
    CHECK(t.on_uevent("add", loop).empty());

    auto grown = loop;
    grown.size_bytes *= 2;
    u = t.on_uevent("change", grown);
    REQUIRE(u.size() == 1);
    CHECK(u[0].event == DiskTracker::Event::changed);
    CHECK(u[0].why.find("size changed") != std::string::npos);

    auto other = grown; // detached and another attached between two events
    other.diskseq += 1;
    u = t.on_uevent("change", other);
    REQUIRE(u.size() == 2);
    CHECK(u[0].event == DiskTracker::Event::detached);
    CHECK(u[1].event == DiskTracker::Event::attached);

    u = t.on_uevent("change", unattached); // losetup -d
    REQUIRE(u.size() == 1);
    CHECK(u[0].event == DiskTracker::Event::detached);
    CHECK(t.disks().empty());

    auto xvdb = load_udev_fixture("xen-xvdb-blank.txt");
    CHECK(t.on_uevent("add", xvdb).size() == 1);
    CHECK(t.on_uevent("add", load_udev_fixture("xen-xvdb1-partition.txt")).empty());
    u = t.on_uevent("remove", xvdb);
    REQUIRE(u.size() == 1);
    CHECK(u[0].why == "removed");
    CHECK(t.on_uevent("remove", xvdb).empty());
}
