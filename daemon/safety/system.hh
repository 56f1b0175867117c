// What the rest of the system does with block devices: mounts, swap, stacked
// devices (holders), and processes holding them open. Parsers take the text of
// /proc files so tests can feed them; sysfs walks take a root for the same reason.
#pragma once

#include <sys/types.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "discovery/match.hh"

namespace prewarmd {

struct MountEntry {
    std::string majmin; // of the mounted device ("0:45" for btrfs and the like)
    std::string mount_point;
    std::string source; // /dev/xvdb1, ...
    std::string fstype;
    std::string options; // the mount's and the superblock's, comma-separated: "rw,relatime,..."
};

std::vector<MountEntry> parse_mountinfo(std::string_view text);
// The Filename column of /proc/swaps, octal escapes undone.
std::vector<std::string> parse_swaps(std::string_view text);
// Undoes the kernel's \040-style escapes in /proc file fields.
std::string unescape_octal(std::string_view text);

class SysBlock {
public:
    explicit SysBlock(std::string sys_root = "/sys") : m_root(std::move(sys_root)) {}

    // Kernel names of a disk's partitions.
    std::vector<std::string> partitions(const std::string& disk) const;
    // What stacks on a block device: dm-0, md0, ...
    std::vector<std::string> holders(const std::string& name) const;
    // The whole disks a device rests on: itself for a disk, its disk for a
    // partition, the disks below a dm or md device (recursively).
    std::set<std::string> base_disks(const std::string& name) const;
    // The kernel name of a device by major:minor ("" when unknown).
    std::string name_of(const std::string& majmin) const;
    std::string attribute(const std::string& name, const std::string& path) const;

private:
    std::string dir_of(const std::string& name) const; // /sys/class/block/NAME
    std::string m_root;
};

// The whole disks (major:minor) under /, /boot and active swap.
ProtectedDisks find_protected_disks(const std::vector<MountEntry>& mounts,
                                    const std::vector<std::string>& swaps, const SysBlock& sys);

struct Opener {
    pid_t pid = 0;
    std::string comm;
    // Its open files could not be read (no CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH):
    // it may hold the disk, and for safety counts as if it did.
    bool unseen = false;
    // Not a process: the scan itself failed here ("/proc: Too many open files"),
    // and anyone may hold the disk.
    std::string unscanned;
    // What it runs and as whom: a name (comm) is any process's to set.
    std::string exe; // /proc/PID/exe, resolved
    uid_t uid = static_cast<uid_t>(-1);

    std::string text() const; // "mkfs.ext4 (pid 812)", "... (pid 9): its open files unreadable"
};
// Processes other than this one holding any of `devices` open (from /proc/*/fd),
// and those whose open files cannot be read.
std::vector<Opener> find_openers(const std::set<dev_t>& devices);
// udev's own workers, which open a disk to probe it: by their name, and by what
// they run (udevd's own program: systemd-udevd, or udevadm, which it links to on
// Debian) as root; a process that only calls itself "(udev-worker)" is not one.
bool is_udev_worker(const Opener& opener);
// Who besides this process has `disk` open, but for udev's workers: "mkfs.ext4
// (pid 812)", or "" for nobody.
std::string someone_else(dev_t disk);

} // namespace prewarmd
