#include "base/range_set.hh"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace prewarmd {

void RangeSet::add(uint64_t begin, uint64_t end) {
    if (begin >= end)
        return;
    // The first range that ends at or after `begin` may merge with the new one.
    auto first = std::lower_bound(m_extents.begin(), m_extents.end(), begin,
                                  [](const Extent& e, uint64_t b) { return e.end() < b; });
    auto last = first;
    while (last != m_extents.end() && last->offset <= end) {
        begin = std::min(begin, last->offset);
        end = std::max(end, last->end());
        ++last;
    }
    first = m_extents.erase(first, last);
    m_extents.insert(first, Extent{begin, end - begin});
}

bool RangeSet::covers(uint64_t begin, uint64_t end) const {
    if (begin >= end)
        return true;
    const Extent* e = next_after(begin);
    return e && e->offset <= begin && e->end() >= end;
}

uint64_t RangeSet::total_bytes() const {
    uint64_t total = 0;
    for (const auto& e : m_extents)
        total += e.length;
    return total;
}

const Extent* RangeSet::next_after(uint64_t offset) const {
    auto it = std::upper_bound(m_extents.begin(), m_extents.end(), offset,
                               [](uint64_t o, const Extent& e) { return o < e.end(); });
    return it == m_extents.end() ? nullptr : &*it;
}

RangeSet RangeSet::intersection(const RangeSet& other) const {
    RangeSet out;
    for (const auto& a : m_extents)
        for (const auto& b : other.m_extents)
            out.add(std::max(a.offset, b.offset), std::min(a.end(), b.end()));
    return out;
}

RangeSet RangeSet::minus(const RangeSet& other) const {
    RangeSet out = *this;
    for (const auto& b : other.m_extents)
        out.remove(b.offset, b.end());
    return out;
}

void RangeSet::remove(uint64_t begin, uint64_t end) {
    if (begin >= end)
        return;
    std::vector<Extent> kept;
    for (const auto& e : m_extents) {
        if (e.end() <= begin || e.offset >= end) {
            kept.push_back(e);
            continue;
        }
        if (e.offset < begin)
            kept.push_back({e.offset, begin - e.offset});
        if (e.end() > end)
            kept.push_back({end, e.end() - end});
    }
    m_extents = std::move(kept);
}

Result<RangeSet> data_extents(int fd, uint64_t size) {
    RangeSet data;
    const auto end_of_file = static_cast<off_t>(size);
    off_t pos = 0;
    while (pos < end_of_file) {
        const off_t start = ::lseek(fd, pos, SEEK_DATA);
        if (start < 0) {
            if (errno == ENXIO)
                break;
            return errno_error("find data");
        }
        const off_t end = ::lseek(fd, start, SEEK_HOLE);
        if (end < 0)
            return errno_error("find holes");
        data.add(static_cast<uint64_t>(start), static_cast<uint64_t>(std::min(end, end_of_file)));
        pos = end;
    }
    return data;
}

} // namespace prewarmd
