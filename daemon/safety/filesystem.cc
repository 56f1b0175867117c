#include "safety/filesystem.hh"

#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <set>
#include <sstream>

namespace prewarmd {
namespace {

bool has_option(const std::string& options, const std::string& name) {
    std::istringstream in(options);
    std::string option;
    while (std::getline(in, option, ','))
        if (option == name)
            return true;
    return false;
}

Error refused(const std::string& mount_point, const std::string& why) {
    return Error{-EINVAL, mount_point + ": " + why};
}

uint64_t number(const std::string& text) {
    try {
        return text.empty() ? 0 : std::stoull(text);
    } catch (const std::exception&) {
        return 0;
    }
}

} // namespace

Result<FilesystemTarget> find_filesystem(const std::string& mount_point,
                                         const std::vector<MountEntry>& mounts,
                                         const SysBlock& sys) {
    const MountEntry* mount = nullptr;
    for (const auto& m : mounts)
        if (m.mount_point == mount_point)
            mount = &m; // the last one is what the path shows
    if (!mount)
        return refused(mount_point, "not a mount point");
    if (mount->fstype != "ext4" && mount->fstype != "xfs")
        return refused(mount_point, mount->fstype + " is not supported yet (ext4 and xfs are)");
    if (!has_option(mount->options, "rw"))
        return refused(mount_point, "mounted read-only");
    // A file there may live on the realtime device, where FIEMAP's places are.
    if (mount->fstype == "xfs" && mount->options.find("rtdev=") != std::string::npos)
        return refused(mount_point, "xfs with a realtime device is not supported");

    FilesystemTarget t;
    t.mount_point = mount_point;
    t.fstype = mount->fstype;
    t.device = sys.name_of(mount->majmin);
    if (const auto colon = mount->majmin.find(':'); colon != std::string::npos)
        t.devnum = makedev(static_cast<unsigned>(number(mount->majmin.substr(0, colon))),
                           static_cast<unsigned>(number(mount->majmin.substr(colon + 1))));
    if (t.device.empty())
        return refused(mount_point, "no block device " + mount->majmin + " in sysfs");
    if (!sys.attribute(t.device, "dm/name").empty() || !sys.attribute(t.device, "md/level").empty())
        return refused(mount_point, t.device + " is a device-mapper or md device (LVM, LUKS, "
                                               "RAID): not supported yet");
    const auto disks = sys.base_disks(t.device);
    if (disks.size() != 1)
        return refused(mount_point, "not on one disk");
    t.disk = *disks.begin();
    if (t.disk != t.device) {
        // Only a partition's place on its disk is known (sysfs start); a device
        // stacked on the disk (bcache, drbd) keeps its data at an offset of its own.
        const auto parts = sys.partitions(t.disk);
        if (std::find(parts.begin(), parts.end(), t.device) == parts.end())
            return refused(mount_point, t.device + " is stacked on " + t.disk +
                                            " (bcache, say): where its data lies on the disk "
                                            "is not known");
        const auto start = sys.attribute(t.device, "start");
        if (start.empty())
            return refused(mount_point, "cannot read where " + t.device + " starts on " + t.disk);
        t.offset_bytes = number(start) * 512;
    }
    t.size_bytes = number(sys.attribute(t.device, "size")) * 512;
    if (t.size_bytes == 0)
        return refused(mount_point, "cannot read the size of " + t.device);
    if (has_option(mount->options, "discard") &&
        number(sys.attribute(t.disk, "queue/discard_max_bytes")) > 0)
        return refused(mount_point, "mounted with discard on a disk that discards: the space it "
                                    "frees would be unwarmed again (mount without discard; "
                                    "fstrim.timer has the same effect weekly)");
    return t;
}

std::vector<Result<FilesystemTarget>> filesystems_on_disk(const std::string& disk,
                                                          const std::vector<MountEntry>& mounts,
                                                          const SysBlock& sys) {
    std::vector<Result<FilesystemTarget>> out;
    std::set<std::string> seen;
    for (const auto& m : mounts) {
        const auto device = sys.name_of(m.majmin);
        if (device.empty() || !seen.insert(m.mount_point).second)
            continue;
        if (const auto disks = sys.base_disks(device); disks.count(disk) != 0)
            out.push_back(find_filesystem(m.mount_point, mounts, sys));
    }
    return out;
}

namespace {

bool own_mount_namespace() {
    std::error_code ec, ec1;
    const auto ours = std::filesystem::read_symlink("/proc/self/ns/mnt", ec);
    const auto pid1 = std::filesystem::read_symlink("/proc/1/ns/mnt", ec1);
    return !ec && !ec1 && ours != pid1;
}

} // namespace

std::string system_root() {
    return own_mount_namespace() ? "/proc/1/root" : "";
}

std::string system_mountinfo_path() {
    return own_mount_namespace() ? "/proc/1/mountinfo" : "/proc/self/mountinfo";
}

bool fstrim_timer_enabled() {
    std::error_code ec;
    return std::filesystem::exists("/etc/systemd/system/timers.target.wants/fstrim.timer", ec);
}

} // namespace prewarmd
