#include "io/free_space.hh"

#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace prewarmd {
namespace {

// Flags of an extent whose place on the device is not plainly known.
constexpr uint32_t not_plain = FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC |
                               FIEMAP_EXTENT_ENCODED | FIEMAP_EXTENT_DATA_ENCRYPTED |
                               FIEMAP_EXTENT_NOT_ALIGNED | FIEMAP_EXTENT_DATA_INLINE |
                               FIEMAP_EXTENT_DATA_TAIL | FIEMAP_EXTENT_SHARED;

} // namespace

Result<FreeSpaceFile> FreeSpaceFile::open(const std::string& directory) {
    UniqueFd fd(::open(directory.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
    if (!fd)
        return errno_error("an unnamed file in " + directory + " (O_TMPFILE)");
    return FreeSpaceFile(std::move(fd));
}

Result<uint64_t> FreeSpaceFile::available() {
    struct statvfs s {};
    if (::fstatvfs(m_fd.get(), &s) < 0)
        return errno_error("statvfs");
    return static_cast<uint64_t>(s.f_bavail) * s.f_frsize;
}

Result<std::vector<ClaimedExtent>> FreeSpaceFile::claim(uint64_t bytes) {
    const uint64_t from = m_size;
    // The size grows with it: ext4 punches no hole past the end of a file. The
    // extents are unwritten, so the file reads zeros, never the device's old bytes.
    if (::fallocate(m_fd.get(), 0, static_cast<off_t>(from), static_cast<off_t>(bytes)) < 0) {
        if (errno != ENOSPC)
            return errno_error("fallocate");
        // Full: what it did allocate (it may have, in part) is ours all the same.
    }
    m_size = from + bytes;
    return where(from, bytes);
}

Result<void> FreeSpaceFile::release(uint64_t file_offset, uint64_t length) {
    if (::fallocate(m_fd.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                    static_cast<off_t>(file_offset), static_cast<off_t>(length)) < 0)
        return errno_error("punching a hole");
    return {};
}

Result<void> FreeSpaceFile::settle() {
    if (::syncfs(m_fd.get()) < 0)
        return errno_error("syncfs");
    return {};
}

Result<std::vector<ClaimedExtent>> FreeSpaceFile::where(uint64_t offset, uint64_t length) const {
    constexpr unsigned batch = 256;
    std::vector<char> buffer(sizeof(fiemap) + batch * sizeof(fiemap_extent));
    auto* map = reinterpret_cast<fiemap*>(buffer.data());
    std::vector<ClaimedExtent> out;
    uint64_t at = offset;
    const uint64_t end = offset + length;
    while (at < end) {
        std::fill(buffer.begin(), buffer.end(), 0);
        map->fm_start = at;
        map->fm_length = end - at;
        map->fm_flags = FIEMAP_FLAG_SYNC;
        map->fm_extent_count = batch;
        if (::ioctl(m_fd.get(), FS_IOC_FIEMAP, map) < 0)
            return errno_error("FIEMAP");
        if (map->fm_mapped_extents == 0)
            break;
        bool last = false;
        for (unsigned i = 0; i < map->fm_mapped_extents; ++i) {
            const auto& e = map->fm_extents[i];
            last = last || (e.fe_flags & FIEMAP_EXTENT_LAST);
            // Clipped to the range asked about: an extent may begin before it.
            const uint64_t begin = std::max<uint64_t>(e.fe_logical, at);
            const uint64_t stop = std::min<uint64_t>(e.fe_logical + e.fe_length, end);
            if (begin < stop && !(e.fe_flags & not_plain))
                out.push_back({begin, e.fe_physical + (begin - e.fe_logical), stop - begin});
            at = std::max(at, stop);
        }
        if (last)
            break;
    }
    return out;
}

} // namespace prewarmd
