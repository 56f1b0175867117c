// The disk or file a job works on: opened as a job needs it (O_DIRECT, and O_EXCL
// for a block device it writes), its geometry, and what the kernel says about it
// while the job runs (sectors written by anyone, whether it is still there).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/range_set.hh"
#include "base/result.hh"
#include "base/unique_fd.hh"

namespace prewarmd {

struct Geometry {
    uint64_t size_bytes = 0;
    uint32_t logical_block_bytes = 512;
    uint32_t physical_block_bytes = 512;
    uint32_t optimal_io_bytes = 0;  // 0: the device states none
    uint32_t dio_align_bytes = 512; // buffers, offsets and lengths for O_DIRECT
    bool is_block_device = false;
};

// What a job watches while it runs; a fake stands in for it in unit tests.
class DeviceProbe {
public:
    virtual ~DeviceProbe() = default;
    // 512-byte sectors written to the device by anyone since boot; nullopt when
    // the kernel keeps no count (regular files); an error when the count is kept
    // but cannot be read now (a job that counts on it stops: docs/safety.md).
    virtual Result<std::optional<uint64_t>> written_sectors() const = 0;
    // False once the device has gone away (and only then: not when it cannot tell).
    virtual bool present() const = 0;
};

class Device final : public DeviceProbe {
public:
    // write: a block device opened O_EXCL (not while mounted, used as swap or held
    // by another kernel user or exclusive opener: mkfs and mount then wait);
    // shared_write: without, so that they do not (the job steps aside for them).
    enum class Access { read, write, shared_write };
    static Result<Device> open(const std::string& path, Access access);

    int fd() const { return m_fd.get(); }
    const std::string& path() const { return m_path; }
    const Geometry& geometry() const { return m_geometry; }
    dev_t devnum() const { return m_rdev; } // 0 for files
    // The sequence number of the disk the descriptor refers to (0: none given). A
    // decision taken on a name stands only while this matches the udev event's.
    uint64_t diskseq() const { return m_diskseq; }
    // Regular files: their data extents (already allocated); empty for devices.
    Result<RangeSet> data_extents() const;

    Result<std::optional<uint64_t>> written_sectors() const override;
    bool present() const override;

private:
    Device() = default;

    UniqueFd m_fd;
    std::string m_path;
    std::string m_sysfs; // /sys/dev/block/MAJ:MIN for block devices
    dev_t m_rdev = 0;
    uint64_t m_diskseq = 0; // 0: the kernel gives none
    Geometry m_geometry;
};

} // namespace prewarmd
