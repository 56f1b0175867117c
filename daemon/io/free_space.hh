// A mounted filesystem's free space, claimed through the filesystem so that
// nobody else can be using it while a job writes there: a file that fallocate
// grows, FIEMAP saying where each claimed piece lies on the filesystem's device,
// and holes punched to give space back.
//
// The file is named (.prewarmd-claim at the filesystem's root) and open only
// while a step claims, maps or gives back, a few milliseconds at a time: a file
// held open for the whole job (an unnamed O_TMPFILE one, say) would make every
// `umount` of the filesystem fail while the job runs. Every step checks that the
// root it opens is still that filesystem (the mount point may hold another one
// by then), and an inotify watch on the file says when it was removed, renamed,
// unmounted, truncated or had a hole punched (then every piece it holds must still
// lie where it was claimed): its blocks are not the job's to write any more
// (lost()). A claim
// left behind by a job that was killed is removed by the next one's open(), and
// a process that watches for the job's end removes it when the job's process
// dies (docs/engine.md "Filesystem jobs").
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/result.hh"
#include "base/unique_fd.hh"

namespace prewarmd {

struct ClaimedExtent {
    uint64_t file_offset = 0;
    uint64_t device_offset = 0; // on the filesystem's own device
    uint64_t length = 0;
};

// The seam a job's source works through; a fake stands in for it in unit tests.
class SpaceClaim {
public:
    virtual ~SpaceClaim() = default;
    // What an unprivileged user could still allocate (statfs f_bavail).
    virtual Result<uint64_t> available() = 0;
    // Claims up to `bytes` more; what the filesystem gave, in file order (fewer
    // bytes than asked when it is full).
    virtual Result<std::vector<ClaimedExtent>> claim(uint64_t bytes) = 0;
    // Gives a claimed range back to the filesystem.
    virtual Result<void> release(uint64_t file_offset, uint64_t length) = 0;
    // Makes what was given back free for everyone now: ext4 and xfs reuse freed
    // blocks (and count them as available) only after a journal commit.
    virtual Result<void> settle() = 0;
    // Why what was claimed may not be the job's any more ("" while it is): the
    // filesystem was unmounted, the claim removed. Cheap: asked before each write.
    virtual std::string lost() { return {}; }
};

// The process that removes a claim when the job's process dies; ends (and is
// waited for) when this goes.
struct Reaper {
    UniqueFd write_end;
    pid_t pid = 0;
    Reaper() = default;
    Reaper(UniqueFd end, pid_t p) : write_end(std::move(end)), pid(p) {}
    Reaper(Reaper&& other) noexcept
        : write_end(std::move(other.write_end)), pid(std::exchange(other.pid, 0)) {}
    Reaper& operator=(Reaper&& other) noexcept {
        std::swap(write_end, other.write_end);
        std::swap(pid, other.pid);
        return *this;
    }
    ~Reaper();
};

// `prewarmd __reap-claim ROOT DEV INODE`: the reaping process (main() asks first).
bool is_reap_command(const std::vector<std::string>& args);
int reap_claim(const std::vector<std::string>& args);

class FreeSpaceFile final : public SpaceClaim {
public:
    static constexpr const char* file_name = ".prewarmd-claim";

    // In the filesystem whose root directory this process reaches at `root` (its
    // mount point, or the same through /proc/1/root), whose st_dev is `device`.
    static Result<FreeSpaceFile> open(const std::string& root, dev_t device);
    FreeSpaceFile(FreeSpaceFile&& other) noexcept;
    FreeSpaceFile& operator=(FreeSpaceFile&&) = delete;
    ~FreeSpaceFile() override; // removes the claim

    Result<uint64_t> available() override;
    Result<std::vector<ClaimedExtent>> claim(uint64_t bytes) override;
    Result<void> release(uint64_t file_offset, uint64_t length) override;
    Result<void> settle() override;
    std::string lost() override;

private:
    FreeSpaceFile(std::string root, dev_t device) : m_root(std::move(root)), m_device(device) {}
    Result<UniqueFd> open_root() const;
    Result<UniqueFd> open_file() const;
    Result<std::vector<ClaimedExtent>> where(int fd, uint64_t offset, uint64_t length) const;
    std::string check_held(int fd) const;
    void remove();

    std::string m_root;
    dev_t m_device = 0;
    ino_t m_inode = 0;
    UniqueFd m_watch; // inotify: the claim removed, renamed, unmounted, changed
    Reaper m_reaper;
    std::string m_lost;                // once lost, lost
    uint64_t m_size = 0;               // claimed so far, holes punched included
    std::vector<ClaimedExtent> m_held; // claimed and not given back, in file order
};

} // namespace prewarmd
