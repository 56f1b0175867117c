#include "discovery/tracker.hh"

#include "base/units.hh"

namespace prewarmd {

std::vector<DiskTracker::Update> DiskTracker::on_uevent(const std::string& action,
                                                        const DiskInfo& disk) {
    std::vector<Update> updates;
    if (disk.is_partition())
        return updates;
    const auto known = m_disks.find(disk.devpath);
    const auto detach = [&](const std::string& why) {
        updates.push_back({Event::detached, known->second, why});
        m_disks.erase(known);
    };
    const auto attach = [&](const std::string& why) {
        updates.push_back({Event::attached, disk, why});
        m_disks[disk.devpath] = disk;
    };

    if (action == "remove") {
        if (known != m_disks.end())
            detach("removed");
        return updates;
    }
    if (known == m_disks.end()) {
        if (disk.size_bytes > 0)
            attach(action == "present" ? "present at start" : "attached");
        return updates;
    }
    if (disk.size_bytes == 0) {
        detach("size dropped to 0: detached, or its medium removed");
        return updates;
    }
    if (disk.diskseq != 0 && known->second.diskseq != 0 && disk.diskseq != known->second.diskseq) {
        detach("replaced by another disk under the same name");
        attach("attached under a name just freed");
        return updates;
    }
    if (disk.size_bytes != known->second.size_bytes) {
        updates.push_back({Event::changed, disk,
                           "size changed from " + format_size(known->second.size_bytes) + " to " +
                               format_size(disk.size_bytes)});
        known->second = disk;
    }
    return updates;
}

} // namespace prewarmd
