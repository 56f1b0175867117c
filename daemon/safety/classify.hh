// Whether a disk may be touched, with reasons a person can read: `eligible` (blank
// and unused: may be warmed by itself), `needs-request` (holds data: only an
// explicit request may warm it, unmounted) or `refused` (in use or read-only).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/names.hh"
#include "discovery/disk_info.hh"
#include "safety/signatures.hh"
#include "safety/system.hh"

namespace prewarmd {

enum class Verdict { eligible, needs_request, refused };
inline constexpr std::array<Named<Verdict>, 3> verdict_names{{
    {Verdict::eligible, "eligible"},
    {Verdict::needs_request, "needs-request"},
    {Verdict::refused, "refused"},
}};
static_assert(names_in_order(verdict_names, Verdict::refused));
constexpr std::span<const Named<Verdict>> names_of(Verdict) {
    return verdict_names;
}

struct DiskFacts {
    uint64_t size_bytes = 0;
    uint32_t logical_block_bytes = 0;
    uint32_t physical_block_bytes = 0;
    uint32_t optimal_io_bytes = 0;
    bool rotational = false;
    bool read_only = false;
    bool removable = false;
    std::vector<std::string> partitions;
    std::vector<Signature> signatures;
};

struct Classification {
    Verdict verdict = Verdict::refused;
    // Refused for now only: another program holds the disk's lock (it writes it, as
    // systemd-repart does). Judged again once the disk is quiet.
    bool locked = false;
    std::vector<std::string> reasons;
    DiskFacts facts;

    std::string reasons_text() const; // "mounted at /mnt; has ext4 filesystem (...)"
};

// What the system around the disk looks like, read once for a round of decisions.
struct SystemView {
    std::vector<MountEntry> mounts;
    std::vector<std::string> swaps;
    SysBlock sys;
    // Why the mounts or the swaps could not be read ("" when they were): then no
    // disk is judged free of them, and classify() refuses every one.
    std::string unreadable;
    static SystemView read();
};

// Classifies through `fd`, an open descriptor of the whole disk: the one the job
// will write through, so the answer is about that disk and no other. Holds
// flock(LOCK_EX) on it while probing, so udev does not probe half-written metadata.
Classification classify(const DiskInfo& disk, int fd, const SystemView& system);

} // namespace prewarmd
