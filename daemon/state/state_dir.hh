// The state directory: one daemon at a time (a lock), a record per disk that has
// had a job, and each job's checkpoint. Every file is written atomically and
// sealed with a checksum; a damaged record is set aside, reported, never trusted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/result.hh"
#include "base/unique_fd.hh"
#include "measurement/probe.hh"

namespace prewarmd {

// What the daemon remembers of a disk's job across restarts.
struct JobRecord {
    std::string identity;
    std::string state; // the disk's state (the scheduler's to name and to check)
    std::string reason;
    std::string mode = "zero";
    bool requested = false; // asked for (API), not taken up by itself
    // Its own rate when asked for one (0: unlimited), outside the shared budget.
    std::optional<uint64_t> rate_bytes_per_s;
    std::string name; // as last seen: xvdb
    uint64_t size_bytes = 0;
    uint64_t done_bytes = 0;
    uint64_t written_bytes = 0;
    uint64_t skipped_bytes = 0;
    int64_t updated_unix = 0;
    ProbeFigures probe; // cold before the job wrote, warm once done
    std::string volume; // DiskInfo::volume of the disk it was for; "" unknown
    // A start's deadline: when it was asked for, and when the disk must be warm.
    std::optional<std::pair<int64_t, int64_t>> deadline_unix;
};

class StateDir {
public:
    // Creates it (mode 0700) and takes its lock: a second daemon on the same state
    // directory is refused, naming the first one's pid.
    static Result<StateDir> open(const std::string& path);

    const std::string& path() const { return m_path; }
    std::string checkpoint_path(const std::string& identity) const;
    // Written atomically. Short of space (ENOSPC, EDQUOT), the directory's spare
    // goes and the write is tried again: a record that says "cancelled" or "done"
    // is kept on a full filesystem, where the one it replaces would come back to
    // life at the next start. The spare is made again once there is room.
    Result<void> save(const JobRecord& record) const;
    // The record and the checkpoint gone (one that stays is judged again at the next start).
    void forget(const std::string& identity) const;
    // The disk's checkpoint gone: its next job starts from nothing.
    void drop_checkpoint(const std::string& identity) const;

    struct Loaded {
        std::vector<JobRecord> records;
        std::vector<std::string> set_aside; // "jobs/x.json: checksum mismatch"
    };
    // Every record; damaged ones are moved into damaged/ and named.
    Loaded load() const;

    // STATE/spare: room for a record (a block or two) many times over, and little
    // taken from the VM's filesystem.
    static constexpr uint64_t spare_bytes = 64 << 10;

private:
    void keep_spare() const;
    std::string m_path;
    UniqueFd m_lock;
    mutable bool m_spare = false; // STATE/spare is there, allocated
};

} // namespace prewarmd
