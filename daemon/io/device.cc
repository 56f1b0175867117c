#include "io/device.hh"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "base/sysfs.hh"

namespace prewarmd {
namespace {

Error open_error(const std::string& path, int err) {
    switch (err) {
    case EBUSY:
        return Error{-EBUSY, path + " is in use: mounted, used as swap, held by another "
                                    "device or opened exclusively by another program"};
    case EROFS:
        return Error{-EROFS, path + " is read-only: it cannot be warmed (--mode read only reads)"};
    case EACCES:
    case EPERM:
        return Error{-err, path + " cannot be opened for writing: " + std::strerror(err)};
    default:
        return Error{-err, "cannot open " + path + ": " + std::strerror(err)};
    }
}

} // namespace

Result<Device> Device::open(const std::string& path, Access access) {
    Device dev;
    dev.m_path = path;
    struct stat st {};
    if (::stat(path.c_str(), &st) < 0)
        return open_error(path, errno);
    const bool block = S_ISBLK(st.st_mode);
    if (!block && !S_ISREG(st.st_mode))
        return Error{-EINVAL, path + " is neither a block device nor a regular file"};

    const bool writes = access != Access::read;
    int flags = O_DIRECT | O_CLOEXEC | (writes ? O_RDWR : O_RDONLY);
    if (block && access == Access::write)
        flags |= O_EXCL;
    dev.m_fd.reset(::open(path.c_str(), flags));
    if (!dev.m_fd)
        return open_error(path, errno);
    // Re-check on the descriptor itself: the name may have changed hands meanwhile.
    if (::fstat(dev.m_fd.get(), &st) < 0)
        return errno_error("stat " + path);

    auto& g = dev.m_geometry;
    g.is_block_device = block;
    if (block && writes) {
        // Newer kernels open a read-only disk for writing and fail each write instead.
        int read_only = 0;
        if (::ioctl(dev.m_fd.get(), BLKROGET, &read_only) == 0 && read_only)
            return open_error(path, EROFS);
    }
    if (block) {
        dev.m_rdev = st.st_rdev;
        dev.m_sysfs = "/sys/dev/block/" + std::to_string(major(st.st_rdev)) + ":" +
                      std::to_string(minor(st.st_rdev));
        int logical = 0;
        unsigned physical = 0, optimal = 0;
        if (::ioctl(dev.m_fd.get(), BLKGETSIZE64, &g.size_bytes) < 0 ||
            ::ioctl(dev.m_fd.get(), BLKSSZGET, &logical) < 0 ||
            ::ioctl(dev.m_fd.get(), BLKPBSZGET, &physical) < 0 ||
            ::ioctl(dev.m_fd.get(), BLKIOOPT, &optimal) < 0)
            return errno_error("geometry of " + path);
        g.logical_block_bytes = static_cast<uint32_t>(logical);
        g.physical_block_bytes = physical;
        g.optimal_io_bytes = optimal;
        g.dio_align_bytes = g.logical_block_bytes;
        if (::ioctl(dev.m_fd.get(), BLKGETDISKSEQ, &dev.m_diskseq) < 0)
            dev.m_diskseq = 0;
    } else {
        g.size_bytes = static_cast<uint64_t>(st.st_size);
        g.physical_block_bytes = static_cast<uint32_t>(st.st_blksize);
        g.logical_block_bytes = 512;
        g.dio_align_bytes = 4096;
        struct statx sx {};
        if (::statx(dev.m_fd.get(), "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 &&
            (sx.stx_mask & STATX_DIOALIGN) && sx.stx_dio_offset_align != 0) {
            g.logical_block_bytes = sx.stx_dio_offset_align;
            g.dio_align_bytes = std::max(sx.stx_dio_offset_align, sx.stx_dio_mem_align);
        }
    }
    return dev;
}

Result<RangeSet> Device::data_extents() const {
    if (m_geometry.is_block_device)
        return RangeSet{};
    auto data = prewarmd::data_extents(m_fd.get(), m_geometry.size_bytes);
    if (!data)
        return Error{data.error().err, m_path + ": " + data.error().message};
    return data;
}

Result<std::optional<uint64_t>> Device::written_sectors() const {
    if (m_sysfs.empty())
        return std::optional<uint64_t>();
    auto sectors = sectors_written(m_rdev);
    if (!sectors)
        return sectors.error();
    return std::optional<uint64_t>(*sectors);
}

bool Device::present() const {
    if (m_sysfs.empty())
        return true;
    // Gone only on evidence: sysfs that cannot be read now (out of descriptors, say)
    // does not make a disk detached, and its job fails rather than waits for it.
    struct stat st {};
    if (::stat((m_sysfs + "/dev").c_str(), &st) < 0)
        return errno != ENOENT && errno != ENOTDIR;
    const auto numbers = read_first_line(m_sysfs + "/dev");
    if (!numbers.empty() &&
        numbers != std::to_string(major(m_rdev)) + ":" + std::to_string(minor(m_rdev)))
        return false;
    // The same numbers may now name another disk; its sequence number tells.
    if (m_diskseq != 0) {
        const auto seq = read_first_line(m_sysfs + "/diskseq");
        if (!seq.empty() && seq != std::to_string(m_diskseq))
            return false;
    }
    uint64_t size = 0;
    return ::ioctl(m_fd.get(), BLKGETSIZE64, &size) == 0 && size > 0;
}

} // namespace prewarmd
