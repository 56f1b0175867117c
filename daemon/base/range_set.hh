// A set of byte ranges [begin, end), kept sorted and merged: what a job has done.
#pragma once

#include <cstdint>
#include <vector>

#include "base/result.hh"

namespace prewarmd {

struct Extent {
    uint64_t offset = 0;
    uint64_t length = 0;
    uint64_t end() const { return offset + length; }
    bool operator==(const Extent&) const = default;
};

class RangeSet {
public:
    void add(uint64_t begin, uint64_t end);
    void add(const Extent& e) { add(e.offset, e.end()); }
    bool covers(uint64_t begin, uint64_t end) const;
    uint64_t total_bytes() const;
    // The first range ending after `offset`, or nullptr.
    const Extent* next_after(uint64_t offset) const;
    const std::vector<Extent>& extents() const { return m_extents; }
    bool empty() const { return m_extents.empty(); }
    // The parts of this set that are in `other`, and those that are not.
    RangeSet intersection(const RangeSet& other) const;
    RangeSet minus(const RangeSet& other) const;
    // Takes [begin, end) out of the set.
    void remove(uint64_t begin, uint64_t end);

private:
    std::vector<Extent> m_extents; // sorted, disjoint, not touching
};

// Where a sparse file holds data, among its first `size` bytes (SEEK_DATA/SEEK_HOLE).
Result<RangeSet> data_extents(int fd, uint64_t size);

} // namespace prewarmd
