#include "discovery/match.hh"

#include <fnmatch.h>

#include <array>
#include <cctype>
#include <cerrno>

#include "base/units.hh"
#include "discovery/identity.hh"

namespace prewarmd {
namespace {

constexpr unsigned xvd_major = 202; // "xvd" in /proc/devices

bool glob_matches(const std::string& glob, const std::string& value) {
    return !value.empty() && ::fnmatch(glob.c_str(), value.c_str(), 0) == 0;
}

// Devices that are never warmed unless a rule names them.
std::string_view special_kind(const DiskInfo& disk) {
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 5> prefixes{{
        {"loop", "a loop device"},
        {"ram", "a RAM disk"},
        {"zram", "a compressed RAM disk"},
        {"dm-", "a device-mapper device"},
        {"md", "a software RAID device"},
    }};
    for (const auto& [prefix, kind] : prefixes)
        if (disk.name.rfind(prefix, 0) == 0 && disk.name.size() > prefix.size() &&
            std::isdigit(static_cast<unsigned char>(disk.name[prefix.size()])))
            return kind;
    return {};
}

} // namespace

bool is_xen_disk(const DiskInfo& disk) {
    if (disk.parent_subsystem == "xen" &&
        (disk.parent_driver == "vbd" || disk.parent_attribute("devtype") == "vbd"))
        return true;
    return xen_vdev(disk).has_value() ||
           (disk.major == xvd_major && disk.name.rfind("xvd", 0) == 0);
}

bool MatchRule::matches(const DiskInfo& disk) const {
    switch (kind) {
    case Kind::xen:
        return is_xen_disk(disk);
    case Kind::name:
        return glob_matches(glob, disk.name);
    case Kind::id:
        return glob_matches(glob, disk_identity(disk));
    case Kind::id_path:
        return glob_matches(glob, disk.property("ID_PATH"));
    case Kind::serial:
        return glob_matches(glob, disk.property("ID_SERIAL")) ||
               glob_matches(glob, disk.property("ID_SERIAL_SHORT")) ||
               glob_matches(glob, disk.attribute("serial"));
    case Kind::wwn:
        return glob_matches(glob, disk.property("ID_WWN")) ||
               glob_matches(glob, disk.property("ID_WWN_WITH_EXTENSION")) ||
               glob_matches(glob, disk.attribute("wwid"));
    case Kind::size:
        return disk.size_bytes >= min_bytes && disk.size_bytes <= max_bytes;
    }
    return false;
}

Result<MatchRule> parse_match_rule(std::string_view text) {
    MatchRule rule;
    rule.text = std::string(text);
    const auto bad = [&](const std::string& why) {
        return Error{-EINVAL, "match rule '" + rule.text + "': " + why};
    };
    if (text == "xen")
        return rule;
    const auto colon = text.find(':');
    if (colon == std::string_view::npos)
        return bad("expected xen, name:GLOB, id:GLOB, id_path:GLOB, serial:GLOB, wwn:GLOB or "
                   "size:MIN-MAX");
    const auto key = text.substr(0, colon);
    const auto value = std::string(text.substr(colon + 1));
    if (value.empty())
        return bad("nothing after ':'");
    if (key == "size") {
        rule.kind = MatchRule::Kind::size;
        const auto dash = value.find('-');
        if (dash == std::string::npos)
            return bad("expected size:MIN-MAX, either end may be left open (size:100GiB-)");
        const auto low = value.substr(0, dash), high = value.substr(dash + 1);
        if (!low.empty()) {
            auto min = parse_size(low);
            if (!min)
                return bad(min.error().message);
            rule.min_bytes = *min;
        }
        if (!high.empty()) {
            auto max = parse_size(high);
            if (!max)
                return bad(max.error().message);
            rule.max_bytes = *max;
        }
        if (rule.min_bytes > rule.max_bytes)
            return bad("the minimum is larger than the maximum");
        return rule;
    }
    rule.glob = value;
    if (key == "name")
        rule.kind = MatchRule::Kind::name;
    else if (key == "id")
        rule.kind = MatchRule::Kind::id;
    else if (key == "id_path")
        rule.kind = MatchRule::Kind::id_path;
    else if (key == "serial")
        rule.kind = MatchRule::Kind::serial;
    else if (key == "wwn")
        rule.kind = MatchRule::Kind::wwn;
    else
        return bad("unknown kind '" + std::string(key) +
                   "' (name, id, id_path, serial, wwn, size)");
    return rule;
}

Result<std::vector<MatchRule>> parse_match_rules(const std::vector<std::string>& texts) {
    std::vector<MatchRule> rules;
    for (const auto& text : texts) {
        auto rule = parse_match_rule(text);
        if (!rule)
            return rule.error();
        rules.push_back(std::move(*rule));
    }
    return rules;
}

MatchDecision decide_match(const DiskInfo& disk, const std::vector<MatchRule>& match,
                           const std::vector<MatchRule>& exclude,
                           const ProtectedDisks& protected_disks) {
    if (disk.is_partition())
        return {false, "a partition: only whole disks are warmed"};
    const auto id = disk.majmin();
    if (protected_disks.root.count(id))
        return {false, "holds the root file system"};
    if (protected_disks.boot.count(id))
        return {false, "holds /boot"};
    if (protected_disks.swap.count(id))
        return {false, "holds active swap"};
    if (disk.size_bytes == 0)
        return {false, "empty (no medium, or not attached)"};
    for (const auto& rule : exclude)
        if (rule.matches(disk))
            return {false, "excluded by rule '" + rule.text + "'"};
    const auto special = special_kind(disk);
    const bool needs_name = !special.empty() || disk.read_only;
    for (const auto& rule : match) {
        if (!rule.matches(disk))
            continue;
        if (needs_name && !rule.names_disks())
            continue;
        return {true, "matches rule '" + rule.text + "'"};
    }
    if (!special.empty())
        return {false, std::string(special) + ": considered only when a rule names it"};
    if (disk.read_only)
        return {false, "read-only: considered only when a rule names it"};
    return {false, "matches no rule"};
}

} // namespace prewarmd
