#include "engine/plan.hh"

#include <algorithm>
#include <cerrno>
#include <numeric>

#include "base/units.hh"

namespace prewarmd {

Result<uint64_t> choose_chunk_bytes(uint64_t requested, bool requested_explicitly,
                                    uint64_t backend_block_bytes, const Geometry& g) {
    if (g.size_bytes % g.logical_block_bytes != 0)
        return Error{-EINVAL, "the size, " + std::to_string(g.size_bytes) +
                                  " bytes, is not a multiple of the logical block size, " +
                                  std::to_string(g.logical_block_bytes) + " bytes"};
    if (backend_block_bytes == 0 || backend_block_bytes % g.logical_block_bytes != 0)
        return Error{-EINVAL, "the backend block, " + format_size(backend_block_bytes) +
                                  ", is not a multiple of the logical block size, " +
                                  std::to_string(g.logical_block_bytes) + " bytes"};
    uint64_t unit = std::lcm(backend_block_bytes, uint64_t{g.dio_align_bytes});
    if (g.optimal_io_bytes != 0)
        unit = std::lcm(unit, uint64_t{g.optimal_io_bytes});
    uint64_t chunk = requested;
    if (chunk == 0 || chunk % unit != 0) {
        if (requested_explicitly)
            return Error{-EINVAL,
                         "the chunk size, " + format_size(requested) +
                             ", must be a multiple of the backend block (" +
                             format_size(backend_block_bytes) + ")" +
                             (g.optimal_io_bytes ? " and of the device's optimal I/O size (" +
                                                       format_size(g.optimal_io_bytes) + ")"
                                                 : std::string()) +
                             ": " + format_size(unit) + " divides every valid chunk"};
        chunk = std::max<uint64_t>(1, (chunk + unit - 1) / unit) * unit;
    }
    if (chunk > max_chunk_bytes)
        return Error{-EINVAL, "the chunk size, " + format_size(chunk) + ", exceeds " +
                                  format_size(max_chunk_bytes)};
    return chunk;
}

unsigned fit_queue_depth(unsigned queue_depth, uint64_t requested_chunk_bytes,
                         uint64_t chunk_bytes) {
    if (chunk_bytes == 0)
        return queue_depth;
    return static_cast<unsigned>(std::min<uint64_t>(
        queue_depth, uint64_t{queue_depth} * requested_chunk_bytes / chunk_bytes));
}

RangeSet regions_to_visit(const Geometry& g, const RangeSet& file_data) {
    RangeSet regions;
    if (g.is_block_device) {
        regions.add(0, g.size_bytes);
        return regions;
    }
    const uint64_t align = g.dio_align_bytes;
    uint64_t pos = 0;
    const auto add_hole = [&](uint64_t begin, uint64_t end) {
        begin = (begin + align - 1) / align * align;
        end = end / align * align;
        regions.add(begin, end);
    };
    for (const auto& data : file_data.extents()) {
        add_hole(pos, std::min(data.offset, g.size_bytes));
        pos = data.end();
    }
    if (pos < g.size_bytes)
        add_hole(pos, g.size_bytes);
    return regions;
}

ChunkPlan::ChunkPlan(RangeSet regions, uint64_t chunk_bytes, RangeSet done, const RangeSet& last)
    : m_regions(std::move(regions)), m_chunk(chunk_bytes), m_done(std::move(done)) {
    for (const auto& set : {m_regions.minus(last), m_regions.intersection(last)})
        m_order.insert(m_order.end(), set.extents().begin(), set.extents().end());
    for (const auto& region : m_regions.extents())
        for (const auto& d : m_done.extents()) {
            const uint64_t begin = std::max(region.offset, d.offset);
            const uint64_t end = std::min(region.end(), d.end());
            if (begin < end)
                m_done_bytes += end - begin;
        }
    if (!m_order.empty())
        m_offset = m_order[0].offset;
}

std::optional<Extent> ChunkPlan::next() {
    const auto& regions = m_order;
    while (m_region < regions.size()) {
        const auto& region = regions[m_region];
        if (m_offset >= region.end()) {
            if (++m_region < regions.size())
                m_offset = regions[m_region].offset;
            continue;
        }
        // Up to the next multiple of the chunk size, so chunks stay aligned.
        const uint64_t boundary = (m_offset / m_chunk + 1) * m_chunk;
        const Extent chunk{m_offset, std::min(boundary, region.end()) - m_offset};
        m_offset = chunk.end();
        if (!m_done.covers(chunk.offset, chunk.end()))
            return chunk;
    }
    return std::nullopt;
}

const Extent* ChunkQueue::peek() {
    if (!m_next) {
        if (!m_again.empty()) {
            m_next = m_again.front();
            m_again.pop_front();
        } else if (m_plan_left) {
            m_next = m_plan.next();
            m_plan_left = m_next.has_value();
        }
    }
    return m_next ? &*m_next : nullptr;
}

SparseQueue::SparseQueue(const RangeSet& regions, uint64_t step, uint64_t piece,
                         const RangeSet& done, const RangeSet& last)
    : m_step(step), m_piece(piece) {
    // Whole blocks of the regions (a region's ragged ends belong to blocks partly
    // outside it: visited too, by their start, when it is inside).
    RangeSet blocks;
    for (const auto& r : regions.extents()) {
        const uint64_t begin = (r.offset + step - 1) / step * step;
        if (begin < r.end())
            blocks.add(begin, r.end());
        m_end = std::max(m_end, r.end());
    }
    m_total = blocks.total_bytes();
    RangeSet todo;
    for (const auto& b : blocks.extents())
        for (uint64_t at = b.offset; at < b.end(); at += step) {
            const uint64_t end = std::min(at + step, b.end());
            if (done.covers(at, end))
                m_resumed += end - at;
            else
                todo.add(at, end);
        }
    const auto first = todo.minus(last);
    const auto later = todo.intersection(last);
    m_blocks = first.extents();
    m_blocks.insert(m_blocks.end(), later.extents().begin(), later.extents().end());
    if (!m_blocks.empty())
        m_at = (m_blocks[0].offset + step - 1) / step * step;
}

const Extent* SparseQueue::peek() {
    if (m_next)
        return &*m_next;
    if (!m_again.empty()) {
        m_next = m_again.front();
        m_again.pop_front();
        return &*m_next;
    }
    while (m_run < m_blocks.size()) {
        const auto& run = m_blocks[m_run];
        if (m_at < run.end()) {
            m_next = Extent{m_at, std::min(m_piece, run.end() - m_at)};
            m_at += m_step;
            return &*m_next;
        }
        if (++m_run < m_blocks.size())
            m_at = (m_blocks[m_run].offset + m_step - 1) / m_step * m_step;
    }
    return nullptr;
}

Extent SparseQueue::covered(const Extent& chunk) const {
    return {chunk.offset, std::min(m_step, m_end - chunk.offset)};
}

RangeSet where_writers_start(uint64_t size) {
    constexpr uint64_t edge = 16ULL << 20;
    RangeSet out;
    out.add(0, std::min(edge, size));
    out.add(size > edge ? size - edge : 0, size);
    return out;
}

} // namespace prewarmd
