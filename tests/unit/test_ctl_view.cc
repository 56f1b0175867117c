#include <doctest/doctest.h>

#include "view.hh"

using namespace prewarmd::ctl;
using json = nlohmann::json;

namespace {

json disk(const std::string& name, const std::string& state, double ratio) {
    return {{"id", "xen-51728-" + name},
            {"name", name},
            {"devnode", "/dev/" + name},
            {"attached", true},
            {"size_bytes", 8589934592ull},
            {"state", state},
            {"reason", state == "failed" ? "write at offset 4096 failed" : ""},
            {"verdict", "eligible"},
            {"verdict_reasons", {"blank"}},
            {"progress",
             {{"progress_ratio", ratio},
              {"total_bytes", 8589934592ull},
              {"done_bytes", static_cast<uint64_t>(ratio * 8589934592.0)},
              {"rate_10s_bytes_per_s", 125829120.0},
              {"eta_seconds", 65}}}};
}

} // namespace

TEST_CASE("prewarmctl: the status table lines up, rates and ETA only while running") {
    const json disks = {disk("xvdb", "running", 0.42), disk("xvdc", "warm", 1.0)};
    const auto table = status_table(disks, Style{});
    CHECK(
        table ==
        "DISK  SIZE      STATE    PROGRESS                     RATE         ETA   ID\n"
        "xvdb  8.00 GiB  running  [########------------]  42%  120.0 MiB/s  1:05  xen-51728-xvdb\n"
        "xvdc  8.00 GiB  warm     [####################] 100%  -            -     "
        "xen-51728-xvdc\n");
    CHECK(status_table(json::array(), Style{}).find("(no disks known)") != std::string::npos);
}

TEST_CASE("prewarmctl: colours only when asked, around the state alone") {
    const json disks = {disk("xvdb", "failed", 0.1)};
    CHECK(status_table(disks, Style{false}).find('\033') == std::string::npos);
    const auto coloured = status_table(disks, Style{true});
    CHECK(coloured.find("\033[31mfailed ") != std::string::npos);
    CHECK(disk_details(disks[0], Style{false}).find('\033') == std::string::npos);
}

TEST_CASE("prewarmctl: one disk in detail") {
    const auto text = disk_details(disk("xvdb", "running", 0.5), Style{});
    CHECK(text.find("xvdb (xen-51728-xvdb)\n") == 0);
    CHECK(text.find("  device:    /dev/xvdb, 8.00 GiB, attached\n") != std::string::npos);
    CHECK(text.find("  verdict:   eligible: blank\n") != std::string::npos);
    CHECK(text.find("  eta:       1:05\n") != std::string::npos);
    CHECK(progress_of(disk("xvdb", "running", 1.7)) == 1.0);
    CHECK(progress_of(json::object()) == 0.0);
}

TEST_CASE("prewarmctl: a job held by adaptive mode says so, not \"at most 1 B/s\"") {
    auto d = disk("xvdb", "running", 0.5);
    d["progress"]["rate_limit_bytes_per_s"] = uint64_t{1};
    d["adaptive"] = "held for a quiet window: one second in which the other disks are timed alone";
    const auto text = disk_details(d, Style{});
    CHECK(text.find("at most") == std::string::npos);
    CHECK(text.find("; held for a quiet window") != std::string::npos);
    d["adaptive"] = "";
    CHECK(disk_details(d, Style{}).find("; at most ") != std::string::npos);
}
