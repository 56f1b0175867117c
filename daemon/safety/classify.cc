#include "safety/classify.hh"

#include <linux/fs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "base/sysfs.hh"

namespace prewarmd {
namespace {

uint64_t number(const std::string& text) {
    uint64_t value = 0;
    std::from_chars(text.data(), text.data() + text.size(), value);
    return value;
}

dev_t devnum(const std::string& majmin) {
    const auto colon = majmin.find(':');
    if (colon == std::string::npos)
        return 0;
    return makedev(static_cast<unsigned>(number(majmin.substr(0, colon))),
                   static_cast<unsigned>(number(majmin.substr(colon + 1))));
}

// Holds flock(LOCK_EX) for as long as it lives (systemd's block device locking),
// if it can be had within 200 ms: never waited for (the caller is the event loop,
// and a tool such as systemd-repart holds the lock while it writes the disk).
class BlockLock {
public:
    explicit BlockLock(int fd) : m_fd(fd) {
        for (int tries = 0; tries < 20; ++tries) {
            if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
                m_locked = true;
                return;
            }
            m_error = errno;
            if (m_error != EWOULDBLOCK)
                return;
            ::usleep(10'000);
        }
    }
    bool locked() const { return m_locked; }
    int error() const { return m_error; } // EWOULDBLOCK: held by another
    ~BlockLock() {
        if (m_locked)
            ::flock(m_fd, LOCK_UN);
    }
    BlockLock(const BlockLock&) = delete;
    BlockLock& operator=(const BlockLock&) = delete;

private:
    int m_fd;
    bool m_locked = false;
    int m_error = 0;
};

} // namespace

std::string Classification::reasons_text() const {
    std::string out;
    for (const auto& r : reasons)
        out += (out.empty() ? "" : "; ") + r;
    return out;
}

SystemView SystemView::read() {
    SystemView view;
    if (auto mounts = read_file("/proc/self/mountinfo"))
        view.mounts = parse_mountinfo(*mounts);
    else
        view.unreadable = mounts.error().message;
    if (auto swaps = read_file("/proc/swaps"))
        view.swaps = parse_swaps(*swaps);
    else
        view.unreadable += (view.unreadable.empty() ? "" : "; ") + swaps.error().message;
    return view;
}

Classification classify(const DiskInfo& disk, int fd, const SystemView& system) {
    Classification c;
    auto& f = c.facts;
    const auto& sys = system.sys;
    const auto attr = [&](const char* path) { return number(sys.attribute(disk.name, path)); };
    uint64_t size = 0;
    f.size_bytes = ::ioctl(fd, BLKGETSIZE64, &size) == 0 ? size : disk.size_bytes;
    f.logical_block_bytes = static_cast<uint32_t>(attr("queue/logical_block_size"));
    f.physical_block_bytes = static_cast<uint32_t>(attr("queue/physical_block_size"));
    f.optimal_io_bytes = static_cast<uint32_t>(attr("queue/optimal_io_size"));
    f.rotational = attr("queue/rotational") != 0;
    f.removable = attr("removable") != 0;
    int read_only = 0;
    f.read_only = attr("ro") != 0 || (::ioctl(fd, BLKROGET, &read_only) == 0 && read_only);
    f.partitions = sys.partitions(disk.name);

    // The disk and its partitions: what mounts, swap and other processes would use.
    std::vector<std::pair<std::string, std::string>> parts{{disk.name, disk.majmin()}};
    for (const auto& p : f.partitions)
        parts.emplace_back(p, sys.attribute(p, "dev"));
    std::set<dev_t> devices;
    for (const auto& [name, majmin] : parts)
        devices.insert(devnum(majmin));

    auto& why = c.reasons;
    if (!system.unreadable.empty()) {
        why.push_back("cannot tell whether it is mounted or swap (" + system.unreadable +
                      "): refused until it can be told");
        c.verdict = Verdict::refused;
        return c;
    }
    const auto label = [&](const std::string& name) {
        return name == disk.name ? std::string() : "partition " + name + " ";
    };
    if (f.read_only)
        why.push_back("read-only");
    if (f.size_bytes == 0)
        why.push_back("empty: size 0");
    for (const auto& m : system.mounts) {
        for (const auto& [name, majmin] : parts) {
            struct stat st {};
            const bool by_source = ::stat(m.source.c_str(), &st) == 0 && S_ISBLK(st.st_mode) &&
                                   st.st_rdev == devnum(majmin);
            if (m.majmin == majmin || by_source)
                why.push_back(label(name) + "mounted at " + m.mount_point);
        }
    }
    for (const auto& swap : system.swaps) {
        struct stat st {};
        if (::stat(swap.c_str(), &st) == 0 && S_ISBLK(st.st_mode) && devices.count(st.st_rdev))
            why.push_back(swap + " is active swap");
    }
    for (const auto& [name, majmin] : parts)
        for (const auto& holder : sys.holders(name))
            why.push_back(label(name) + "held by " + holder);
    for (const auto& opener : find_openers(devices))
        if (!is_udev_worker(opener))
            why.push_back("open in another process: " + opener.text());
    const bool in_use = !why.empty();

    {
        BlockLock lock(fd);
        if (!lock.locked()) {
            // Someone writing it holds the lock (udev's own probe takes 10s of ms):
            // its signatures may be half-written. In use now; judged again when it
            // changes (the writer's close sends a change event).
            why.push_back("its block device lock is held by another program (" +
                          std::string(lock.error() == EWOULDBLOCK ? "for 200 ms"
                                                                   : std::strerror(lock.error())) +
                          "): being written, maybe");
            c.verdict = Verdict::refused;
            c.locked = lock.error() == EWOULDBLOCK;
            return c;
        }
        auto signatures =
            probe_signatures(fd, f.size_bytes, f.logical_block_bytes ? f.logical_block_bytes : 512);
        if (!signatures) {
            why.push_back("cannot read its signatures: " + signatures.error().message);
            c.verdict = Verdict::refused;
            return c;
        }
        f.signatures = std::move(*signatures);
    }
    for (const auto& s : f.signatures)
        why.push_back("has " + s.describe());

    if (in_use)
        c.verdict = Verdict::refused;
    else if (!f.signatures.empty())
        c.verdict = Verdict::needs_request;
    else {
        c.verdict = Verdict::eligible;
        why.push_back("blank: no signature, not in use");
    }
    return c;
}

} // namespace prewarmd
