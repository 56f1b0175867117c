// Which disks the daemon considers: the built-in `xen` class and the config's
// match and exclude rules, each a string: xen, name:GLOB, id:GLOB (prewarmd's own
// disk id), id_path:GLOB, serial:GLOB, wwn:GLOB, size:MIN-MAX (units allowed,
// either end open).
#pragma once

#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hh"
#include "discovery/disk_info.hh"

namespace prewarmd {

struct MatchRule {
    enum class Kind { xen, name, id, id_path, serial, wwn, size } kind = Kind::xen;
    std::string glob;
    uint64_t min_bytes = 0;
    uint64_t max_bytes = std::numeric_limits<uint64_t>::max();
    std::string text; // as written

    bool matches(const DiskInfo& disk) const;
    // Whether it picks disks out by what they are called, as loop, ram, zram, dm
    // and md devices need before they are considered.
    bool names_disks() const { return kind != Kind::xen && kind != Kind::size; }
};

Result<MatchRule> parse_match_rule(std::string_view text);
Result<std::vector<MatchRule>> parse_match_rules(const std::vector<std::string>& texts);

// Whole disks (major:minor) that are never touched, whatever the rules say.
struct ProtectedDisks {
    std::set<std::string> root, boot, swap;
};

struct MatchDecision {
    bool matched = false;
    std::string reason; // "matches rule 'xen'", "holds the root file system", ...
};

MatchDecision decide_match(const DiskInfo& disk, const std::vector<MatchRule>& match,
                           const std::vector<MatchRule>& exclude,
                           const ProtectedDisks& protected_disks);

// A Xen virtual block device: on the xen bus as a vbd, or named for one.
bool is_xen_disk(const DiskInfo& disk);

} // namespace prewarmd
