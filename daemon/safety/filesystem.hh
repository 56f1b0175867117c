// May a mounted filesystem be warmed online, and where does it lie: its disk and
// its offset on it. ext4 and xfs, on a whole disk or a partition of it; what is
// not supported yet is said with the reason.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.hh"
#include "safety/system.hh"

namespace prewarmd {

struct FilesystemTarget {
    std::string mount_point;
    std::string fstype;
    std::string device;        // the mounted device's kernel name: loop3p1, xvdb
    std::string disk;          // the whole disk's: loop3, xvdb
    uint64_t offset_bytes = 0; // where the device begins on the disk
    uint64_t size_bytes = 0;   // of the device
    dev_t devnum = 0;          // the st_dev of its files
};

// The filesystem mounted at `mount_point` (the last mount there), or why it may
// not be warmed: read-only, not ext4 or xfs, on LVM, LUKS or md, mounted with
// `discard` on a device that discards (freeing warmed space would unwarm it).
Result<FilesystemTarget> find_filesystem(const std::string& mount_point,
                                         const std::vector<MountEntry>& mounts,
                                         const SysBlock& sys);

// Where the system's mounts are seen as they are. A service in its own mount
// namespace (the packaged unit's PrivateMounts= and ProtectSystem=strict) has
// copies of them, read-only or hidden; PID 1's are the system's. "" or
// "/proc/1/root": the prefix that reaches a mount point of the system.
std::string system_root();
// Its mount table: /proc/1/mountinfo, or this process's when it shares PID 1's.
std::string system_mountinfo_path();

// The filesystems mounted from a disk (the whole disk or a partition of it), one
// per mount point: what find_filesystem says of each.
std::vector<Result<FilesystemTarget>> filesystems_on_disk(const std::string& disk,
                                                          const std::vector<MountEntry>& mounts,
                                                          const SysBlock& sys);

// Whether systemd's weekly fstrim is enabled: it discards filesystems' free space.
bool fstrim_timer_enabled();

} // namespace prewarmd
