// What a disk holds, as libblkid and a look at its last sector tell: file systems,
// partition tables, RAID and LVM members, LUKS, swap, and a GPT whose primary header
// is gone but whose backup at the end remains.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.hh"

namespace prewarmd {

struct Signature {
    std::string type;  // ext4, xfs, dos, gpt, crypto_LUKS, LVM2_member, linux_raid_member, ...
    std::string usage; // filesystem, raid, crypto, other, or "partition table"
    std::string uuid;
    std::string label;
    std::string where; // "" for the disk itself, "partition 1", "the last sector"

    std::string describe() const; // "ext4 filesystem (UUID ..., label ...)"
};

// Probes through `fd` (its O_DIRECT flag is lifted meanwhile: libblkid reads
// unaligned). Fails only when the disk cannot be read.
Result<std::vector<Signature>> probe_signatures(int fd, uint64_t size_bytes,
                                                uint32_t logical_block_bytes);

} // namespace prewarmd
