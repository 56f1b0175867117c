// Turns udev's add, change and remove of block devices into what the daemon acts
// on: a disk attached (or present at start), changed in a way that matters (size,
// medium), or detached. Loop devices attach as `change` (size 0 to non-zero); the
// `change` udev sends when anyone, ourselves included, closes a disk it wrote is
// no news; a new disk sequence number under the same name is another disk.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/names.hh"
#include "discovery/disk_info.hh"

namespace prewarmd {

class DiskTracker {
public:
    enum class Event { attached, changed, detached };
    struct Update {
        Event event;
        DiskInfo disk;
        std::string why;
    };

    // `action`: add, change, remove, or present (found when enumerating at start).
    std::vector<Update> on_uevent(const std::string& action, const DiskInfo& disk);
    // The disks attached now, by device path.
    const std::map<std::string, DiskInfo>& disks() const { return m_disks; }

private:
    std::map<std::string, DiskInfo> m_disks;
};

inline constexpr std::array<Named<DiskTracker::Event>, 3> tracker_event_names{{
    {DiskTracker::Event::attached, "attached"},
    {DiskTracker::Event::changed, "changed"},
    {DiskTracker::Event::detached, "detached"},
}};
static_assert(names_in_order(tracker_event_names, DiskTracker::Event::detached));
constexpr std::span<const Named<DiskTracker::Event>> names_of(DiskTracker::Event) {
    return tracker_event_names;
}

} // namespace prewarmd
