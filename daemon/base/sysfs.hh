// Reading the kernel's small text files: sysfs attributes, /proc tables.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "base/result.hh"

namespace prewarmd {

std::string read_text(const std::string& path); // "" when unreadable
// The whole file, or why it cannot be read: where "" would be taken as "none".
Result<std::string> read_file(const std::string& path);
std::string read_first_line(const std::string& path);
// 512-byte sectors written to a block device by anyone since boot, from
// /sys/dev/block/MAJ:MIN/stat. An error when it cannot be read (-ENOENT: no such
// device; -EMFILE and the like: the count is there, unread): never a guess.
Result<uint64_t> sectors_written(dev_t devnum);
// 512-byte sectors discarded on it since boot (fstrim, mkfs, blkdiscard), the same
// way; -ENODATA where the kernel counts no discards (before Linux 4.18).
Result<uint64_t> sectors_discarded(dev_t devnum);

} // namespace prewarmd
