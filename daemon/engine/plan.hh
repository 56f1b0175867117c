// Which chunks a job visits, and how big they are.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.hh"
#include "base/range_set.hh"
#include "base/result.hh"
#include "io/device.hh"

namespace prewarmd {

constexpr uint64_t max_chunk_bytes = 64ULL * 1024 * 1024;

// The chunk size for a device: a multiple of the backend block, of the device's
// optimal I/O size and of its logical block. A requested size that is not is an
// error; the default (`requested_explicitly` false) grows to the least common one.
Result<uint64_t> choose_chunk_bytes(uint64_t requested, bool requested_explicitly,
                                    uint64_t backend_block_bytes, const Geometry& geometry);
// The chunks in flight for `chunk_bytes` that keep the buffers within what
// `queue_depth` chunks of `requested_chunk_bytes` hold: a chunk grown to fit the
// device takes fewer at once. 0 where one chunk alone is more.
unsigned fit_queue_depth(unsigned queue_depth, uint64_t requested_chunk_bytes,
                         uint64_t chunk_bytes);

// The chunks to visit, in order and computed as they are taken: the regions (the
// whole device; a file's holes) cut at multiples of the chunk size, less the chunks
// already done; the parts of the regions in `last` after all the others. A chunk
// partly done is visited again, whole.
class ChunkPlan {
public:
    ChunkPlan(RangeSet regions, uint64_t chunk_bytes, RangeSet done, const RangeSet& last = {});
    std::optional<Extent> next();
    uint64_t total_bytes() const { return m_regions.total_bytes(); }
    // Bytes of the regions that `done` covers: what a resumed job need not visit.
    uint64_t done_bytes() const { return m_done_bytes; }

private:
    RangeSet m_regions;
    std::vector<Extent> m_order; // the regions not in `last`, then those in it
    uint64_t m_chunk;
    RangeSet m_done;
    size_t m_region = 0;
    uint64_t m_offset = 0; // next offset inside the current region
    uint64_t m_done_bytes = 0;
};

// Where a job's chunks come from, in order: a disk's regions (ChunkQueue), or a
// filesystem's free space as it is claimed (engine/fs_source.hh). peek() looks
// without taking, so a chunk can wait for the throttle.
class ChunkSource {
public:
    virtual ~ChunkSource() = default;
    // The next chunk, or nullptr when none is there now.
    virtual const Extent* peek() = 0;
    virtual void take() = 0;
    // To visit again, first (put back after a pause or an error).
    virtual void again(const Extent& chunk) = 0;
    // Its reads and writes are done.
    virtual void visited(const Extent&) {}
    // No chunk now, and none will come.
    virtual bool exhausted() = 0;
    virtual uint64_t total_bytes() const = 0;
    virtual uint64_t resumed_bytes() const = 0; // visited in an earlier run
    // The disk range a visited chunk stands for: itself, or for a sparse job's
    // small piece its whole backend block. Progress, the rate and the checkpoint
    // count it.
    virtual Extent covered(const Extent& chunk) const { return chunk; }
    // One piece per block rather than every byte.
    virtual bool sparse() const { return false; }
    // Its own work, on the job's thread: when it next wants to run (nullopt: no
    // time of its own). An error ends the job.
    virtual Result<std::optional<Clock::time_point>> tick(Clock::time_point now) {
        (void)now;
        return std::optional<Clock::time_point>();
    }
    // Why its chunks are not the job's to write any more ("" while they are): a
    // filesystem's claim that went away. Asked before each write.
    virtual std::string lost() { return {}; }
};

// A disk's regions: chunks to visit again first (most recent first), then the plan's.
class ChunkQueue final : public ChunkSource {
public:
    explicit ChunkQueue(ChunkPlan plan) : m_plan(std::move(plan)) {}
    const Extent* peek() override;
    void take() override { m_next.reset(); }
    void again(const Extent& chunk) override { m_again.push_front(chunk); }
    bool exhausted() override { return peek() == nullptr; }
    uint64_t total_bytes() const override { return m_plan.total_bytes(); }
    uint64_t resumed_bytes() const override { return m_plan.done_bytes(); }

private:
    ChunkPlan m_plan;
    bool m_plan_left = true;
    std::deque<Extent> m_again;
    std::optional<Extent> m_next;
};

// A sparse job's chunks: one piece (`piece` bytes) at the start of each backend
// block (`step`, aligned on the disk) of the regions, standing for the whole
// block; blocks `done` covers are passed over, those in `last` come last.
class SparseQueue final : public ChunkSource {
public:
    SparseQueue(const RangeSet& regions, uint64_t step, uint64_t piece, const RangeSet& done,
                const RangeSet& last = {});
    const Extent* peek() override;
    void take() override { m_next.reset(); }
    void again(const Extent& chunk) override { m_again.push_front(chunk); }
    bool exhausted() override { return peek() == nullptr; }
    uint64_t total_bytes() const override { return m_total; }
    uint64_t resumed_bytes() const override { return m_resumed; }
    Extent covered(const Extent& chunk) const override;
    bool sparse() const override { return true; }

private:
    std::vector<Extent> m_blocks; // runs of whole blocks to visit, in order
    uint64_t m_step, m_piece;
    size_t m_run = 0;
    uint64_t m_at = 0; // next block start in the current run
    std::deque<Extent> m_again;
    std::optional<Extent> m_next;
    uint64_t m_total = 0, m_resumed = 0;
    uint64_t m_end = 0; // of the regions: a last block may be short
};

// The regions a job visits: a block device whole; a file's holes, trimmed to the
// direct I/O alignment (its data is allocated already).
RangeSet regions_to_visit(const Geometry& geometry, const RangeSet& file_data);

// The first and last 16 MiB of a disk, where other writers start (partition
// tables, superblocks, dd from offset 0): visited last.
RangeSet where_writers_start(uint64_t size);

} // namespace prewarmd
