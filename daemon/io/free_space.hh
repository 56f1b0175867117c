// A mounted filesystem's free space, claimed through the filesystem so that
// nobody else can be using it while a job writes there: an unnamed O_TMPFILE file
// that fallocate grows (a crash or SIGKILL frees it: nothing to clean up), FIEMAP
// saying where each claimed piece lies on the filesystem's device, and holes
// punched to give space back.
#pragma once

#include <cstdint>
#include <string>
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
};

class FreeSpaceFile final : public SpaceClaim {
public:
    // In the filesystem mounted at `directory` (any directory of it).
    static Result<FreeSpaceFile> open(const std::string& directory);

    Result<uint64_t> available() override;
    Result<std::vector<ClaimedExtent>> claim(uint64_t bytes) override;
    Result<void> release(uint64_t file_offset, uint64_t length) override;
    Result<void> settle() override;

private:
    explicit FreeSpaceFile(UniqueFd fd) : m_fd(std::move(fd)) {}
    Result<std::vector<ClaimedExtent>> where(uint64_t offset, uint64_t length) const;

    UniqueFd m_fd;
    uint64_t m_size = 0; // claimed so far, holes punched included
};

} // namespace prewarmd
