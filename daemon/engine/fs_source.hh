// A filesystem job's chunks: free space claimed through the mounted filesystem
// (io/free_space.hh) a step at a time, where it lies on the disk, cut into
// chunks of whole backend blocks; given back, from the end, the moment the
// filesystem's available space falls below the reserve; claims wait a second
// then, and the pass ends.
//
// Claimed down to the reserve, or `max_claimed` (what a claim left behind by an
// unmount can hold), and visited, it slides on: gives back its oldest claims (a
// step's worth) and claims as much again; where that finds nothing new, it
// claims more first. An allocator goes on from
// where it stopped (ext4's goal after a file's last block and its stream rotor,
// xfs's rotor), so new claims reach the space the reserve kept out, and later
// files land in warm space too. What it warmed already is not visited again. It
// ends once it has claimed the whole filesystem's worth without finding anything
// new, or `max_sweeps` times the filesystem in all.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "control/choices.hh"
#include "engine/plan.hh"
#include "io/device.hh"
#include "io/free_space.hh"
#include "measurement/probe.hh"

namespace prewarmd {

struct FsSourceOptions {
    uint64_t disk_offset = 0;   // where the filesystem's device begins on the disk
    uint64_t device_bytes = 0;  // its size: a claimed place past its end stops the job
    uint64_t backend_block = 0; // chunks are whole, aligned backend blocks of the disk
    uint64_t chunk = 0;         // a multiple of the backend block
    uint64_t reserve = 0;       // available space never claimed
    // Sparse: one piece of this many bytes at the start of each backend block,
    // standing for the block (0: every byte).
    uint64_t piece = 0;
    uint64_t step = 256ULL << 20;
    // Claimed at most at once: what a claim left behind can hold (docs/engine.md).
    uint64_t max_claimed = 1ULL << 30;
    std::chrono::milliseconds check{50};
    unsigned max_sweeps = 4;
    std::chrono::milliseconds pause_after_pressure{1000};
};

// The cold probe's calibration in the job's own claim, before it writes anything
// (the places of a proof after the job are the filesystem's again by then): 4 MiB
// regions of claimed free space that read all-zero, probed as the cold probe's
// calibration regions (a first write, one beside it, the first again), then zero
// writes timed against data writes there (the claim is the job's to write any
// data on: whether the backend keeps zero writes), then given back (docs/engine.md
// "Filesystem jobs", "Backends that discard zero writes"). -EBUSY: the claim was
// lost meanwhile (unmounted, removed).
Result<ColdProbe> probe_in_claim(const Device& device, SpaceClaim& claim,
                                 const FsSourceOptions& options);

class FsSource final : public ChunkSource {
public:
    // `done`: disk ranges warmed by an earlier run (the checkpoint's).
    FsSource(std::unique_ptr<SpaceClaim> claim, FsSourceOptions options, RangeSet done);

    const Extent* peek() override;
    void take() override;
    void again(const Extent& chunk) override;
    void visited(const Extent& chunk) override;
    bool exhausted() override;
    uint64_t total_bytes() const override;
    uint64_t resumed_bytes() const override { return 0; }
    // Checks the available space; gives claimed space back when it is short.
    Result<std::optional<Clock::time_point>> tick(Clock::time_point now) override;
    std::string lost() override { return m_claim->lost(); }
    Extent covered(const Extent& chunk) const override;
    bool sparse() const override { return m_options.piece != 0; }

    uint64_t claimed_bytes() const;
    uint64_t released_bytes() const { return m_released; }
    uint64_t swept_bytes() const { return m_swept; }

private:
    struct Claimed {
        ClaimedExtent file;
        Extent disk; // its whole backend blocks on the disk (may be empty)
    };
    Result<void> claim_more();
    Result<void> slide();
    Result<void> give_back(uint64_t bytes);
    bool in_flight(const Extent& disk) const;

    std::unique_ptr<SpaceClaim> m_claim;
    FsSourceOptions m_options;
    RangeSet m_done;                // the checkpoint's, and what this run visited
    RangeSet m_warmed;              // visited in this run
    std::vector<Claimed> m_claimed; // in file order
    std::deque<Extent> m_queue;     // chunks not yet taken, in claim order
    std::deque<Extent> m_again;
    std::vector<Extent> m_taken; // chunks out, reading or writing
    bool m_full = false;         // claimed all it may now
    bool m_last = false;         // and it will not slide on
    std::optional<Error> m_error;
    Clock::time_point m_claims_paused_until{};
    uint64_t m_swept = 0;           // claimed in all
    uint64_t m_swept_since_new = 0; // claimed since a claim last found something new
    uint64_t m_fs_bytes = 0;        // available at the start
    uint64_t m_total = 0;
    uint64_t m_released = 0;
    uint64_t m_cap = 0;    // claimed at most now: max_claimed, more where it must
    bool m_capped = false; // the last claim was cut short by the cap, not the reserve
};

} // namespace prewarmd
