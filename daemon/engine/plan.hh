// Which chunks a job visits, and how big they are.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>

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

// The chunks to visit, in order and computed as they are taken: the regions (the
// whole device; a file's holes) cut at multiples of the chunk size, less the chunks
// already done. A chunk partly done is visited again, whole.
class ChunkPlan {
public:
    ChunkPlan(RangeSet regions, uint64_t chunk_bytes, RangeSet done);
    std::optional<Extent> next();
    uint64_t total_bytes() const { return m_regions.total_bytes(); }
    // Bytes of the regions that `done` covers: what a resumed job need not visit.
    uint64_t done_bytes() const { return m_done_bytes; }

private:
    RangeSet m_regions;
    uint64_t m_chunk;
    RangeSet m_done;
    size_t m_region = 0;
    uint64_t m_offset = 0; // next offset inside the current region
    uint64_t m_done_bytes = 0;
};

// What a job visits next: chunks to visit again first (put back after a pause or an
// error, most recent first), then the plan's. peek() looks without taking, so a
// chunk can wait for the throttle.
class ChunkQueue {
public:
    explicit ChunkQueue(ChunkPlan plan) : m_plan(std::move(plan)) {}
    const Extent* peek();
    void take() { m_next.reset(); }
    void again(const Extent& chunk) { m_again.push_front(chunk); }
    bool empty() { return peek() == nullptr; }
    const ChunkPlan& plan() const { return m_plan; }

private:
    ChunkPlan m_plan;
    bool m_plan_left = true;
    std::deque<Extent> m_again;
    std::optional<Extent> m_next;
};

// The regions a job visits: a block device whole; a file's holes, trimmed to the
// direct I/O alignment (its data is allocated already).
RangeSet regions_to_visit(const Geometry& geometry, const RangeSet& file_data);

} // namespace prewarmd
