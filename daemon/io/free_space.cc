#include "io/free_space.hh"

#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <signal.h>
#include <spawn.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>
#include <vector>

namespace prewarmd {
namespace {

// Flags of an extent whose place on the device is not plainly known.
constexpr uint32_t not_plain = FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC |
                               FIEMAP_EXTENT_ENCODED | FIEMAP_EXTENT_DATA_ENCRYPTED |
                               FIEMAP_EXTENT_NOT_ALIGNED | FIEMAP_EXTENT_DATA_INLINE |
                               FIEMAP_EXTENT_DATA_TAIL | FIEMAP_EXTENT_SHARED;

constexpr const char* reap_command = "__reap-claim";

// Removes the claim in `root` if it is still the one of that device and inode
// (or does nothing).
void remove_claim(const std::string& root, dev_t device, ino_t inode) {
    UniqueFd dir(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    struct stat st {};
    if (!dir || ::fstat(dir.get(), &st) < 0 || st.st_dev != device)
        return;
    if (::fstatat(dir.get(), FreeSpaceFile::file_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        st.st_ino == inode && st.st_dev == device)
        ::unlinkat(dir.get(), FreeSpaceFile::file_name, 0);
}

// The process that removes the claim when the job's process dies (SIGKILL, a
// crash): this program again, waiting for the end of a pipe whose other end only
// the job's process holds. Started in /, holding nothing on the filesystem.
Reaper start_reaper(const std::string& root, dev_t device, ino_t inode) {
    int ends[2];
    if (::pipe2(ends, O_CLOEXEC) < 0)
        return {};
    UniqueFd read_end(ends[0]), write_end(ends[1]);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, read_end.get(), 0);
    // Nothing else of ours: descriptors opened without O_CLOEXEC (the API's client
    // sockets, by cpp-httplib 0.11.4's accept) would stay open as long as it lives.
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    posix_spawn_file_actions_addchdir_np(&actions, "/");
    const std::string dev = std::to_string(device), ino = std::to_string(inode);
    const char* argv[] = {"prewarmd",  reap_command, root.c_str(),
                          dev.c_str(), ino.c_str(),  nullptr};
    pid_t pid = 0;
    const int err = ::posix_spawn(&pid, "/proc/self/exe", &actions, nullptr,
                                  const_cast<char* const*>(argv), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (err != 0)
        return {};
    return {std::move(write_end), pid};
}

} // namespace

bool is_reap_command(const std::vector<std::string>& args) {
    return args.size() == 4 && args[0] == reap_command;
}

int reap_claim(const std::vector<std::string>& args) {
    // Stopped with the job's process (systemd's SIGTERM to the whole unit), it
    // would leave the claim: it goes when the pipe says the job's process went.
    ::signal(SIGTERM, SIG_IGN);
    ::signal(SIGINT, SIG_IGN);
    ::signal(SIGHUP, SIG_IGN);
    for (char byte;;)
        if (const ssize_t n = ::read(0, &byte, 1); n == 0 || (n < 0 && errno != EINTR))
            break;
    remove_claim(args[1], static_cast<dev_t>(std::stoull(args[2])),
                 static_cast<ino_t>(std::stoull(args[3])));
    return 0;
}

Reaper::~Reaper() {
    write_end.reset();
    if (pid > 0)
        ::waitpid(pid, nullptr, 0);
}

Result<FreeSpaceFile> FreeSpaceFile::open(const std::string& root, dev_t device) {
    FreeSpaceFile f(root, device);
    auto dir = f.open_root();
    if (!dir)
        return dir.error();
    // A claim left by a job that was killed: ours to remove, whatever it holds.
    if (::unlinkat(dir->get(), file_name, 0) < 0 && errno != ENOENT)
        return errno_error("removing the claim left in " + root);
    UniqueFd fd(
        ::openat(dir->get(), file_name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd)
        return errno_error("a claim file in " + root);
    struct stat st {};
    if (::fstat(fd.get(), &st) < 0)
        return errno_error("stat of the claim in " + root);
    f.m_inode = st.st_ino;
    fd.reset(); // closed: an open file would make the filesystem's umount fail
    f.m_watch.reset(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    if (!f.m_watch)
        return errno_error("inotify");
    const std::string path = root + "/" + file_name;
    if (::inotify_add_watch(f.m_watch.get(), path.c_str(),
                            IN_ATTRIB | IN_MODIFY | IN_DELETE_SELF | IN_MOVE_SELF |
                                IN_DONT_FOLLOW) < 0)
        return errno_error("watch " + path);
    f.m_reaper = start_reaper(root, device, f.m_inode);
    if (!f.m_reaper.write_end)
        return Error{-EAGAIN, "cannot start the process that removes the claim if this one dies"};
    return f;
}

FreeSpaceFile::FreeSpaceFile(FreeSpaceFile&& other) noexcept
    : m_root(std::move(other.m_root)), m_device(other.m_device),
      m_inode(std::exchange(other.m_inode, 0)), m_watch(std::move(other.m_watch)),
      m_reaper(std::move(other.m_reaper)), m_lost(std::move(other.m_lost)), m_size(other.m_size),
      m_held(std::move(other.m_held)) {}

FreeSpaceFile::~FreeSpaceFile() {
    remove();
}

// The claim goes (if it is still this one), then the reaping process, which finds
// nothing to do.
void FreeSpaceFile::remove() {
    if (!m_inode)
        return;
    remove_claim(m_root, m_device, std::exchange(m_inode, 0));
    m_reaper = {};
}

Result<UniqueFd> FreeSpaceFile::open_root() const {
    UniqueFd dir(::open(m_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir)
        return errno_error(m_root);
    struct stat st {};
    if (::fstat(dir.get(), &st) < 0)
        return errno_error(m_root);
    if (st.st_dev != m_device)
        return Error{-ENODEV, "the filesystem at " + m_root + " was unmounted"};
    return dir;
}

Result<UniqueFd> FreeSpaceFile::open_file() const {
    auto dir = open_root();
    if (!dir)
        return dir.error();
    UniqueFd fd(::openat(dir->get(), file_name, O_RDWR | O_NOFOLLOW | O_CLOEXEC));
    if (!fd)
        return errno_error("the claim in " + m_root);
    struct stat st {};
    if (::fstat(fd.get(), &st) < 0)
        return errno_error("stat of the claim in " + m_root);
    if (st.st_ino != m_inode || st.st_nlink != 1)
        return Error{-ESTALE, "the claim in " + m_root + " was replaced"};
    return fd;
}

std::string FreeSpaceFile::lost() {
    if (!m_lost.empty())
        return m_lost;
    alignas(inotify_event) char buffer[4096];
    bool any = false;
    for (ssize_t n; (n = ::read(m_watch.get(), buffer, sizeof buffer)) > 0;)
        for (ssize_t at = 0; at < n;) {
            const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
            // The first that tells: an unmount ends the watch too (IN_IGNORED after).
            if (m_lost.empty() && (event->mask & IN_UNMOUNT))
                m_lost = "the filesystem at " + m_root + " was unmounted";
            else if (m_lost.empty() && (event->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)))
                m_lost = "the claim in " + m_root + " was removed by someone else";
            any = true;
            at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
        }
    // A change of its attributes may be anything (a link count of 0, a chmod), a
    // change of its content a truncate or a hole punched (ours as well: claim and
    // release raise it too): still there, still this one, still its only name,
    // every piece it holds where it was claimed?
    if (any && m_lost.empty()) {
        if (auto fd = open_file(); !fd)
            m_lost = fd.error().message;
        else
            m_lost = check_held(fd->get());
    }
    return m_lost;
}

std::string FreeSpaceFile::check_held(int fd) const {
    auto now = where(fd, 0, m_size);
    if (!now)
        return "the claim in " + m_root + " cannot be mapped: " + now.error().message;
    // Both in file order: each held piece must be covered, end to end, by mapped
    // extents at the same place on the device.
    auto it = now->begin();
    for (const auto& held : m_held) {
        uint64_t at = held.file_offset;
        const uint64_t end = held.file_offset + held.length;
        while (it != now->end() && it->file_offset + it->length <= at)
            ++it;
        for (auto e = it; at < end; ++e) {
            if (e == now->end() || e->file_offset > at ||
                e->device_offset - e->file_offset != held.device_offset - held.file_offset)
                return "the claim in " + m_root + " no longer holds what the job claimed (" +
                       std::to_string(held.length >> 10) + " KiB at " +
                       std::to_string(held.file_offset >> 10) +
                       " KiB): truncated, or a hole punched by someone else";
            at = e->file_offset + e->length;
        }
    }
    return {};
}

Result<uint64_t> FreeSpaceFile::available() {
    auto dir = open_root();
    if (!dir)
        return dir.error();
    struct statvfs s {};
    if (::fstatvfs(dir->get(), &s) < 0)
        return errno_error("statvfs");
    return static_cast<uint64_t>(s.f_bavail) * s.f_frsize;
}

Result<std::vector<ClaimedExtent>> FreeSpaceFile::claim(uint64_t bytes) {
    auto fd = open_file();
    if (!fd)
        return fd.error();
    const uint64_t from = m_size;
    // The size grows with it: ext4 punches no hole past the end of a file. The
    // extents are unwritten, so the file reads zeros, never the device's old bytes.
    if (::fallocate(fd->get(), 0, static_cast<off_t>(from), static_cast<off_t>(bytes)) < 0) {
        if (errno != ENOSPC)
            return errno_error("fallocate");
        // Full: what it did allocate (it may have, in part) is ours all the same.
    }
    m_size = from + bytes;
    auto got = where(fd->get(), from, bytes);
    if (got)
        m_held.insert(m_held.end(), got->begin(), got->end());
    return got;
}

Result<void> FreeSpaceFile::release(uint64_t file_offset, uint64_t length) {
    auto fd = open_file();
    if (!fd)
        return fd.error();
    if (::fallocate(fd->get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                    static_cast<off_t>(file_offset), static_cast<off_t>(length)) < 0)
        return errno_error("punching a hole");
    // What is left of each held piece outside [file_offset, end).
    const uint64_t end = file_offset + length;
    std::vector<ClaimedExtent> held;
    for (const auto& h : m_held) {
        const uint64_t h_end = h.file_offset + h.length;
        if (h_end <= file_offset || h.file_offset >= end) {
            held.push_back(h);
            continue;
        }
        if (h.file_offset < file_offset)
            held.push_back({h.file_offset, h.device_offset, file_offset - h.file_offset});
        if (h_end > end)
            held.push_back({end, h.device_offset + (end - h.file_offset), h_end - end});
    }
    m_held = std::move(held);
    return {};
}

Result<void> FreeSpaceFile::settle() {
    auto dir = open_root();
    if (!dir)
        return dir.error();
    if (::syncfs(dir->get()) < 0)
        return errno_error("syncfs");
    return {};
}

Result<std::vector<ClaimedExtent>> FreeSpaceFile::where(int fd, uint64_t offset,
                                                        uint64_t length) const {
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
        if (::ioctl(fd, FS_IOC_FIEMAP, map) < 0)
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
