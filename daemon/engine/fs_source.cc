#include "engine/fs_source.hh"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <memory>

#include "base/units.hh"
#include "base/zero.hh"

namespace prewarmd {
namespace {

uint64_t round_up(uint64_t value, uint64_t unit) {
    return (value + unit - 1) / unit * unit;
}

uint64_t round_down(uint64_t value, uint64_t unit) {
    return value / unit * unit;
}

bool overlap(const Extent& a, const Extent& b) {
    return a.offset < b.end() && b.offset < a.end();
}

struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
};

// The regions of the claimed extents that read all-zero, up to `wanted`; probed
// when there are `needed`.
Result<ColdProbe> probe_zero_regions(const Device& device,
                                     const std::vector<ClaimedExtent>& extents,
                                     uint64_t disk_offset, size_t wanted, size_t needed,
                                     SpaceClaim& claim) {
    constexpr uint64_t spacing = 2 * max_granularity;
    void* p = nullptr;
    if (const int e = ::posix_memalign(&p, 4096, max_granularity); e != 0)
        return Error{-e, "cannot allocate a probe buffer"};
    const std::unique_ptr<char, FreeDeleter> buffer(static_cast<char*>(p));
    std::vector<uint64_t> places;
    size_t looked = 0;
    for (const auto& e : extents) {
        const uint64_t begin = round_up(disk_offset + e.device_offset, max_granularity);
        const uint64_t end = disk_offset + e.device_offset + e.length;
        for (uint64_t at = begin; at + max_granularity <= end && places.size() < wanted;
             at += spacing) {
            ++looked;
            const ssize_t n =
                ::pread(device.fd(), buffer.get(), max_granularity, static_cast<off_t>(at));
            if (n < 0)
                return errno_error("read at offset " + std::to_string(at));
            if (static_cast<uint64_t>(n) == max_granularity &&
                is_all_zero(buffer.get(), max_granularity))
                places.push_back(at);
        }
    }
    if (places.size() < needed)
        return Error{-ENOSPC, "too little never-written free space to probe (" +
                                  std::to_string(places.size()) + " of " + std::to_string(looked) +
                                  " regions of 4 MiB claimed read all-zero)"};
    return probe_regions(
        device, places, [&claim] { return claim.lost(); }, true);
}

// FIEMAP's places must lie on the filesystem's device: one past its end (an xfs
// realtime file, a filesystem over several devices) is on another device, and the
// same offset of this one is someone else's.
Result<void> on_the_device(const std::vector<ClaimedExtent>& extents, uint64_t device_bytes) {
    for (const auto& e : extents)
        if (e.device_offset + e.length > device_bytes)
            return Error{-ERANGE, "the filesystem placed claimed space at " +
                                      std::to_string(e.device_offset) + "+" +
                                      std::to_string(e.length) + ", past the end of its device (" +
                                      std::to_string(device_bytes) +
                                      " bytes): not where the job may write"};
    return {};
}

} // namespace

Result<ColdProbe> probe_in_claim(const Device& device, SpaceClaim& claim,
                                 const FsSourceOptions& options) {
    constexpr size_t regions_wanted = 8, regions_needed = 4, candidates = 24;
    constexpr uint64_t spacing = 2 * max_granularity;
    auto available = claim.available();
    if (!available)
        return available.error();
    const uint64_t room = *available > options.reserve ? *available - options.reserve : 0;
    const uint64_t bytes = round_down(std::min<uint64_t>(room, candidates * spacing), spacing);
    if (bytes < regions_needed * spacing)
        return Error{-ENOSPC, "too little free space above the reserve to probe (" +
                                  format_size(room) + ")"};
    auto extents = claim.claim(bytes);
    if (!extents)
        return extents.error();
    if (auto placed = on_the_device(*extents, options.device_bytes); !placed)
        return placed.error();
    auto probe = probe_zero_regions(device, *extents, options.disk_offset, regions_wanted,
                                    regions_needed, claim);
    // The filesystem went (unmounted, the claim removed): nothing to give back to,
    // and the job will step aside at its first look.
    if (const auto lost = claim.lost(); !lost.empty())
        return Error{-EBUSY, lost};
    for (const auto& e : *extents)
        if (auto released = claim.release(e.file_offset, e.length); !released)
            return released.error();
    if (auto settled = claim.settle(); !settled)
        return settled.error();
    return probe;
}

FsSource::FsSource(std::unique_ptr<SpaceClaim> claim, FsSourceOptions options, RangeSet done)
    : m_claim(std::move(claim)), m_options(options), m_done(std::move(done)),
      m_cap(options.max_claimed) {
    // What the job sets out to warm: the space available now, less the reserve.
    // (The passes reach the reserve too: the estimate is all that is available.)
    if (auto available = m_claim->available(); available) {
        m_fs_bytes = *available;
        m_total = round_down(*available, m_options.backend_block);
    }
}

uint64_t FsSource::total_bytes() const {
    const uint64_t visited = m_warmed.total_bytes();
    if (m_last && m_queue.empty() && m_again.empty())
        return visited;
    return std::max(m_total, visited);
}

const Extent* FsSource::peek() {
    if (!m_again.empty())
        return &m_again.front();
    while (m_queue.empty() && !m_error && Clock::now() >= m_claims_paused_until) {
        Result<void> step;
        if (!m_full)
            step = claim_more();
        else if (!m_last && m_taken.empty())
            step = slide(); // once the chunks claimed are all visited
        else
            break;
        if (!step) {
            m_error = step.error();
            m_full = m_last = true;
        }
    }
    return m_queue.empty() ? nullptr : &m_queue.front();
}

void FsSource::take() {
    auto& from = m_again.empty() ? m_queue : m_again;
    m_taken.push_back(from.front());
    from.pop_front();
}

void FsSource::again(const Extent& chunk) {
    std::erase(m_taken, chunk);
    m_again.push_front(chunk);
}

void FsSource::visited(const Extent& chunk) {
    std::erase(m_taken, chunk);
    m_warmed.add(covered(chunk));
    m_done.add(covered(chunk));
}

Extent FsSource::covered(const Extent& chunk) const {
    return m_options.piece ? Extent{chunk.offset, m_options.backend_block} : chunk;
}

bool FsSource::exhausted() {
    return peek() == nullptr && m_last;
}

// The oldest claims back, a step's worth, so that the next claims go on from
// where the allocator is now.
Result<void> FsSource::slide() {
    if (m_claimed.empty() || m_swept_since_new >= m_fs_bytes ||
        m_swept >= m_options.max_sweeps * m_fs_bytes) {
        m_last = true;
        return {};
    }
    if (m_swept_since_new > 0 && m_capped) {
        // The last claims found nothing new: the allocator hands back what was
        // given back (xfs stays in its allocation group). More is claimed, and
        // nothing given back, until claims find new space again.
        m_cap = claimed_bytes() + m_options.step;
        m_full = false;
        return {};
    }
    uint64_t back = 0;
    while (!m_claimed.empty() && back < m_options.step) {
        const auto& oldest = m_claimed.front().file;
        if (auto released = m_claim->release(oldest.file_offset, oldest.length); !released)
            return released.error();
        back += oldest.length;
        m_claimed.erase(m_claimed.begin());
    }
    m_full = false;
    return m_claim->settle();
}

uint64_t FsSource::claimed_bytes() const {
    uint64_t bytes = 0;
    for (const auto& c : m_claimed)
        bytes += c.file.length;
    return bytes;
}

// One step more of the available space above the reserve.
Result<void> FsSource::claim_more() {
    auto available = m_claim->available();
    if (!available)
        return available.error();
    const uint64_t room = *available > m_options.reserve ? *available - m_options.reserve : 0;
    const uint64_t held = claimed_bytes();
    const uint64_t cap = m_cap > held ? m_cap - held : 0;
    m_capped = cap < std::min(room, m_options.step);
    const uint64_t bytes =
        round_down(std::min({room, cap, m_options.step}), m_options.backend_block);
    if (bytes == 0) {
        m_full = true;
        return {};
    }
    auto extents = m_claim->claim(bytes);
    if (!extents)
        return extents.error();
    if (auto placed = on_the_device(*extents, m_options.device_bytes); !placed)
        return placed.error();
    uint64_t got = 0;
    const size_t queued = m_queue.size();
    for (const auto& e : *extents) {
        got += e.length;
        // Only whole backend blocks: one partly outside is partly someone's.
        const uint64_t begin =
            round_up(m_options.disk_offset + e.device_offset, m_options.backend_block);
        const uint64_t end =
            round_down(m_options.disk_offset + e.device_offset + e.length, m_options.backend_block);
        Claimed c{e, {begin, end > begin ? end - begin : 0}};
        m_claimed.push_back(c);
        if (c.disk.length == 0)
            continue;
        if (m_options.piece) {
            for (uint64_t at = c.disk.offset; at < c.disk.end(); at += m_options.backend_block)
                if (!m_done.covers(at, at + m_options.backend_block))
                    m_queue.push_back({at, m_options.piece});
            continue;
        }
        RangeSet todo;
        todo.add(c.disk);
        const auto left = todo.minus(m_done);
        for (const auto& part : left.extents())
            for (uint64_t at = part.offset; at < part.end(); at += m_options.chunk)
                m_queue.push_back({at, std::min(m_options.chunk, part.end() - at)});
    }
    m_swept += got;
    m_swept_since_new = m_queue.size() > queued ? 0 : m_swept_since_new + got;
    if (got < bytes)
        m_full = true;
    return {};
}

bool FsSource::in_flight(const Extent& disk) const {
    return std::any_of(m_taken.begin(), m_taken.end(),
                       [&](const Extent& t) { return overlap(t, disk); });
}

// Punches claimed pieces from the end until `bytes` are back, passing over those
// with a chunk out: the job may be writing there. Chunks of a piece given back
// are not visited: the filesystem may hand it to anyone now.
Result<void> FsSource::give_back(uint64_t bytes) {
    uint64_t back = 0;
    for (auto it = m_claimed.rbegin(); it != m_claimed.rend() && back < bytes;) {
        if (in_flight(it->disk)) {
            ++it;
            continue;
        }
        if (auto released = m_claim->release(it->file.file_offset, it->file.length); !released)
            return released.error();
        back += it->file.length;
        const auto inside = [&](const Extent& chunk) { return overlap(chunk, it->disk); };
        std::erase_if(m_queue, inside);
        std::erase_if(m_again, inside);
        it = std::make_reverse_iterator(m_claimed.erase(std::next(it).base()));
    }
    m_released += back;
    return back > 0 ? m_claim->settle() : Result<void>();
}

Result<std::optional<Clock::time_point>> FsSource::tick(Clock::time_point now) {
    if (m_error)
        return *m_error;
    auto available = m_claim->available();
    if (!available)
        return available.error();
    if (*available < m_options.reserve) {
        // The workload needs it: back at once, and claims wait a moment.
        m_full = true;
        m_claims_paused_until = now + m_options.pause_after_pressure;
        if (auto back = give_back(m_options.reserve - *available); !back)
            return back.error();
    }
    return std::optional<Clock::time_point>(now + m_options.check);
}

} // namespace prewarmd
