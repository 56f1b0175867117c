#include "measurement/probe.hh"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>

#include <nlohmann/json.hpp>

#include "base/units.hh"
#include "measurement/quiet.hh"

namespace prewarmd {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t calibration_bytes = max_granularity; // one region: 4 MiB from a stride's start

// Bytes the probes of this thread wrote: a cold probe says how much was its own.
thread_local uint64_t t_written_bytes = 0;

struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<unsigned char, FreeDeleter>;

Result<AlignedBuffer> aligned_buffer(size_t bytes) {
    void* p = nullptr;
    if (const int e = ::posix_memalign(&p, 4096, bytes); e != 0)
        return Error{-e, "cannot allocate a probe buffer"};
    return AlignedBuffer(static_cast<unsigned char*>(p));
}

Result<void> read_fully(int fd, unsigned char* buffer, size_t bytes, uint64_t offset) {
    const ssize_t n = ::pread(fd, buffer, bytes, static_cast<off_t>(offset));
    if (n < 0)
        return errno_error("read at offset " + std::to_string(offset));
    if (static_cast<size_t>(n) != bytes)
        return Error{-EIO, "short read at offset " + std::to_string(offset)};
    return {};
}

// A write of `buffer` as it is (4 KiB unless told), in seconds. Not when someone
// else is at the disk, or the space is not the probe's any more.
Result<double> timed_write(int fd, const unsigned char* buffer, uint64_t offset,
                           const SomeoneElse& someone_else, size_t bytes = probe_io_bytes) {
    if (someone_else)
        if (auto why = someone_else(); !why.empty())
            return Error{-EBUSY, std::move(why)};
    const auto start = Clock::now();
    const ssize_t n = ::pwrite(fd, buffer, bytes, static_cast<off_t>(offset));
    const auto took = std::chrono::duration<double>(Clock::now() - start).count();
    if (n < 0)
        return errno_error("write at offset " + std::to_string(offset));
    if (static_cast<size_t>(n) != bytes)
        return Error{-EIO, "short write at offset " + std::to_string(offset)};
    t_written_bytes += bytes;
    return took;
}

// Reads 4 KiB and writes the same bytes back; the write's time, in seconds.
Result<double> timed_rewrite(int fd, unsigned char* buffer, uint64_t offset,
                             const SomeoneElse& someone_else) {
    if (auto r = read_fully(fd, buffer, probe_io_bytes, offset); !r)
        return r.error();
    return timed_write(fd, buffer, offset, someone_else);
}

uint64_t stride_bytes(uint64_t size_bytes, unsigned strides) {
    return strides ? size_bytes / strides / max_granularity * max_granularity : 0;
}

// A 4 KiB read's time, in seconds.
Result<double> timed_read(int fd, unsigned char* buffer, uint64_t offset) {
    const auto start = Clock::now();
    if (auto r = read_fully(fd, buffer, probe_io_bytes, offset); !r)
        return r.error();
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// One calibration region, 4 MiB from `offset`: a read of never-written space at
// `never_at` (before anything near it is read or written: a cache between would
// serve it otherwise), a control (the previous region's start, written before: warm),
// its first write, two writes beside it just after (4 and 8 KiB on), writes 64 KiB,
// 128 KiB ... 2 MiB on, and the first place again (warm by then).
struct Calibration {
    double never = 0, control = 0, first = 0, beside = 0, again = 0; // control 0: none
    double far = 0;           // a first write 5 MiB on, past any block of 4 MiB; 0: none
    uint64_t granularity = 0; // 0: not told
};

constexpr uint64_t never_read_at = 3ULL << 20; // into a region
constexpr size_t pair_io_bytes = 64 << 10;     // a claim's zero and data writes
constexpr int pairs_per_region = 8;
static_assert(never_read_at + pair_io_bytes <= calibration_bytes);

// `far_at`: after those, a first write past the largest block told apart (none in
// a stride too short for it).
Result<Calibration> calibrate(int fd, unsigned char* buffer, uint64_t offset, uint64_t never_at,
                              std::optional<uint64_t> control_at, const SomeoneElse& someone_else,
                              std::optional<uint64_t> far_at = std::nullopt) {
    Calibration c;
    auto never = timed_read(fd, buffer, never_at);
    if (!never)
        return never.error();
    c.never = *never;
    if (control_at) {
        auto control = timed_rewrite(fd, buffer, *control_at, someone_else);
        if (!control)
            return control.error();
        c.control = *control;
    }
    auto first = timed_rewrite(fd, buffer, offset, someone_else);
    if (!first)
        return first.error();
    // Two writes beside it, the faster counted: a hiccup of the host slows one of
    // them (cowsim's 4 MiB blocks: 2 of 24 beside writes over 500 us, where a warm
    // one takes 40-110 us and the line is 220-820 us; 2026-12-07), where a backend
    // that allocates per sector makes both cold.
    auto beside = timed_rewrite(fd, buffer, offset + probe_io_bytes, someone_else);
    if (!beside)
        return beside.error();
    auto next = timed_rewrite(fd, buffer, offset + 2 * probe_io_bytes, someone_else);
    if (!next)
        return next.error();
    std::vector<double> at_distance;
    for (uint64_t d = min_granularity; d < max_granularity; d *= 2) {
        auto t = timed_rewrite(fd, buffer, offset + d, someone_else);
        if (!t)
            return t.error();
        at_distance.push_back(*t);
    }
    auto again = timed_rewrite(fd, buffer, offset, someone_else);
    if (!again)
        return again.error();
    if (far_at) {
        auto far = timed_rewrite(fd, buffer, *far_at, someone_else);
        if (!far)
            return far.error();
        c.far = *far;
    }
    c.first = *first;
    c.beside = std::min(*beside, *next);
    c.again = *again;
    c.granularity = granularity_from(c.first, c.again, at_distance);
    return c;
}

// Where a first write was cold, a first write 5 MiB on (past any block of 4 MiB)
// must be cold too if the cost was a block's allocation. Warm there in 3 of 4 such
// regions (at least 3 counted), the cost spans 8 MiB or more: the backend's own
// bookkeeping, a fresh table of it, not an allocation of data (QEMU's qcow2 with
// detect-zeroes on a 16 GiB image: a new L2 table per 512 MiB made every stride's
// first zero write 29x a second, where nothing was allocated; 2026-12-06). Then
// the penalty proves nothing: `bookkeeping`, and the allocation is unknown.
void judge_far(ColdProbe& out, const std::vector<Calibration>& regions) {
    unsigned counted = 0, warm = 0;
    for (const auto& r : regions) {
        if (r.far <= 0 || r.first < 3 * r.again)
            continue;
        ++counted;
        warm += r.far <= std::sqrt(r.first * r.again);
    }
    out.bookkeeping = counted >= 3 && 4 * warm >= 3 * counted;
    if (out.bookkeeping) {
        out.allocation = Allocation::unknown;
        out.allocation_note = std::to_string(warm) + " of " + std::to_string(counted) +
                              " first writes 5 MiB past a cold one were warm: the cost spans 8 "
                              "MiB or more, the backend's bookkeeping, not a block's allocation";
    }
}

// The rewrite figures, the granularity (the regions' median) and the verdict. Zero
// writes are judged on the regions' reads of never-written space and more of
// them (`more_never`, each with a write of a warm place, `more_warm`): the
// strides past the regions.
void judge_regions(ColdProbe& out, const std::vector<Calibration>& regions,
                   const std::vector<double>& more_warm = {},
                   const std::vector<double>& more_never = {}) {
    std::vector<double> never, first, beside, again, controlled_first, control, warm_write;
    std::vector<uint64_t> estimates;
    std::vector<double> fresh_never;
    for (const auto& r : regions) {
        never.push_back(r.never);
        first.push_back(r.first);
        beside.push_back(r.beside);
        again.push_back(r.again);
        // A write of a warm place, the faster of two: a hiccup only ever slows one.
        warm_write.push_back(r.control > 0 ? std::min(r.again, r.control) : r.again);
        fresh_never.push_back(r.never);
        if (r.control > 0) {
            controlled_first.push_back(r.first);
            control.push_back(r.control);
        }
        if (r.granularity)
            estimates.push_back(r.granularity);
    }
    out.rewrite = summarize(again);
    if (estimates.empty()) {
        out.granularity_note = "unknown: no first-write penalty to time";
    } else {
        std::sort(estimates.begin(), estimates.end());
        out.granularity_bytes = estimates[estimates.size() / 2];
        const auto agree = std::count(estimates.begin(), estimates.end(), out.granularity_bytes);
        out.granularity_note =
            std::to_string(agree) + " of " + std::to_string(regions.size()) + " regions agree";
        if (out.granularity_bytes == max_granularity)
            out.granularity_note += "; 4 MiB or more";
    }
    judge_allocation(out, first, beside, again);
    judge_far(out, regions);
    out.never_read = summarize(never);
    warm_write.insert(warm_write.end(), more_warm.begin(), more_warm.end());
    fresh_never.insert(fresh_never.end(), more_never.begin(), more_never.end());
    judge_zero_writes_by_reads(out, warm_write, fresh_never, controlled_first, control);
}

// The median of a[i] / b[i]: pairs timed back to back, which a busy machine slows alike.
double median_ratio(const std::vector<double>& a, const std::vector<double>& b) {
    std::vector<double> ratios;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
        if (b[i] > 0)
            ratios.push_back(a[i] / b[i]);
    if (ratios.empty())
        return 0;
    std::sort(ratios.begin(), ratios.end());
    const size_t n = ratios.size();
    return n % 2 ? ratios[n / 2] : (ratios[n / 2 - 1] + ratios[n / 2]) / 2;
}

// Per region, after its calibration: a data write 3 MiB on (where the never-written
// read was) and a zero write at the region's start, both untimed, then
// pairs_per_region times the zero write again and the data write again, back to
// back; then zeros where the data was. Each write is pair_io_bytes: the larger the
// write, the more a data write costs over a discarded zero write, against a host's
// jitter that stays the same.
struct DataPairs {
    std::vector<double> zero_again, data_again;
};

Result<void> time_data_pairs(int fd, unsigned char* buffer, uint64_t offset,
                             const SomeoneElse& someone_else, DataPairs& out) {
    const uint64_t data_at = offset + never_read_at;
    const auto write = [&](unsigned char fill, uint64_t at) {
        std::fill(buffer, buffer + pair_io_bytes, fill);
        return timed_write(fd, buffer, at, someone_else, pair_io_bytes);
    };
    if (auto first = write(free_space_fill, data_at); !first)
        return first.error();
    if (auto first = write(0, offset); !first)
        return first.error();
    for (int i = 0; i < pairs_per_region; ++i) {
        auto zero = write(0, offset);
        if (!zero)
            return zero.error();
        auto data = write(free_space_fill, data_at);
        if (!data)
            return data.error();
        out.zero_again.push_back(*zero);
        out.data_again.push_back(*data);
    }
    if (auto restored = write(0, data_at); !restored)
        return restored.error();
    return {};
}

} // namespace

void judge_zero_writes_by_reads(ColdProbe& probe, const std::vector<double>& again_s,
                                const std::vector<double>& never_s,
                                const std::vector<double>& first_s,
                                const std::vector<double>& control_s) {
    std::string penalty;
    if (probe.bookkeeping) {
        penalty = " (a first write's cost that spans 8 MiB or more: bookkeeping, not allocation)";
    } else if (has_penalty(probe)) {
        const double paired =
            std::min(first_s.size(), control_s.size()) >= 3 ? median_ratio(first_s, control_s) : 0;
        penalty = "a first zero write costs " +
                  format_ratio(penalty_ratio(probe.cold, probe.rewrite), 2) + " a second, " +
                  format_ratio(paired, 2) + " a warm write just before it";
        if (paired >= 3) {
            probe.zero_writes = ZeroWrites::kept;
            probe.zero_writes_note = penalty + ": zero writes allocate";
            return;
        }
        penalty = " (" + penalty + ": not a penalty of the first write's own)";
    }
    if (again_s.size() < 4 || never_s.size() < 4) {
        probe.zero_writes = ZeroWrites::unknown;
        probe.zero_writes_note = "too few regions to tell" + penalty;
        return;
    }
    const double r = median_ratio(again_s, never_s);
    probe.zero_over_never = r;
    probe.hole_reads = 0;
    probe.read_pairs = static_cast<unsigned>(std::min(again_s.size(), never_s.size()));
    for (size_t i = 0; i < probe.read_pairs; ++i)
        probe.hole_reads += again_s[i] >= 1.5 * never_s[i];
    const std::string figures = "a zero write costs " + format_ratio(r, 2) +
                                " a read of never-written space (1.5x or "
                                "more in " +
                                std::to_string(probe.hole_reads) + " of " +
                                std::to_string(probe.read_pairs) + " places)" + penalty;
    // 1.3x by the median, and 1.5x or more at a quarter of the places at least
    // (QEMU's qcow2 keeping zeros on the bed: 1.45x to 2.03x, 5 to 14 of 16 places;
    // discarding: 0.51x to 0.73x, 0 or 1 of 16; 2026-12-06, idle and with both cores busy).
    const bool some = 4 * probe.hole_reads >= probe.read_pairs;
    if (r >= 1.3 && some) {
        probe.zero_writes = ZeroWrites::kept;
        probe.zero_writes_note = figures + ": zero writes reach storage";
    } else {
        probe.zero_writes = ZeroWrites::unknown;
        probe.zero_writes_note =
            figures + ": with zeros alone, a backend that discards zero writes cannot be told "
                      "from one that is warm";
    }
}

void judge_zero_writes_by_data(ColdProbe& probe, const std::vector<double>& zero_again_s,
                               const std::vector<double>& data_again_s) {
    if (zero_again_s.size() < 4 || data_again_s.size() < 4) {
        probe.zero_writes = ZeroWrites::unknown;
        probe.zero_writes_note = "too few regions to tell";
        return;
    }
    const double r = median_ratio(zero_again_s, data_again_s);
    const std::string figures = "a zero write costs " + format_ratio(r, 2) + " a data write";
    if (r >= 0.75) {
        probe.zero_writes = ZeroWrites::kept;
        probe.zero_writes_note = figures + ": zero writes reach storage";
    } else if (r > 0 && r < 0.65) {
        probe.zero_writes = ZeroWrites::discarded;
        probe.zero_writes_note = figures + ": this backend discards zero writes";
    } else {
        probe.zero_writes = ZeroWrites::unknown;
        probe.zero_writes_note = figures + ": too near to tell";
    }
}

unsigned probe_strides(uint64_t size_bytes, unsigned samples) {
    // A stride holds its calibration region and, half a stride on, the warm place.
    const uint64_t fit = size_bytes / (2 * calibration_bytes);
    return static_cast<unsigned>(std::min<uint64_t>(samples, fit));
}

std::vector<uint64_t> cold_offsets(uint64_t size_bytes, unsigned strides) {
    std::vector<uint64_t> out;
    const uint64_t stride = stride_bytes(size_bytes, strides);
    for (unsigned i = 0; i < strides; ++i)
        out.push_back(i * stride);
    return out;
}

std::vector<uint64_t> warm_offsets(uint64_t size_bytes, unsigned strides) {
    std::vector<uint64_t> out;
    const uint64_t stride = stride_bytes(size_bytes, strides);
    const uint64_t half = stride / 2 / max_granularity * max_granularity;
    for (unsigned i = 0; i < strides; ++i)
        out.push_back(i * stride + half);
    return out;
}

ProbeLatency summarize(std::vector<double> seconds) {
    ProbeLatency s;
    s.samples = static_cast<unsigned>(seconds.size());
    if (seconds.empty())
        return s;
    std::sort(seconds.begin(), seconds.end());
    const auto rank = [&](double q) {
        const auto i = static_cast<size_t>(std::ceil(q * static_cast<double>(seconds.size())));
        return seconds[std::clamp<size_t>(i, 1, seconds.size()) - 1];
    };
    s.p50_s = rank(0.50);
    s.p99_s = rank(0.99);
    return s;
}

double penalty_ratio(const ProbeLatency& cold, const ProbeLatency& warm) {
    return cold.samples && warm.samples && warm.p50_s > 0 ? cold.p50_s / warm.p50_s : 0;
}

bool has_penalty(const ColdProbe& cold) {
    return penalty_ratio(cold.cold, cold.rewrite) >= 3;
}

bool zero_writes_tell_nothing(const ColdProbe& cold) {
    // Of 2 places a stride, a tenth may be slow at their first write: a host's
    // hiccups (1 to 3 of 32 on warm cowsim disks, 2026-12-06).
    return cold.strides && cold.zero_writes == ZeroWrites::unknown &&
           10 * cold.cold_places <= 2 * cold.strides &&
           cold.hole_reads <= std::max(1u, cold.read_pairs / 16) && !has_penalty(cold) &&
           cold.zero_over_never > 0 && cold.zero_over_never < 1;
}

bool still_cold(const ColdProbe& cold, const WarmProbe& warm) {
    if (!has_penalty(cold) || !warm.warm.samples)
        return false;
    if (warm.reference.samples && warm.ratio_p50 > 0)
        return warm.ratio_p50 > std::sqrt(penalty_ratio(cold.cold, cold.rewrite));
    return warm.warm.p50_s > std::sqrt(cold.cold.p50_s * cold.rewrite.p50_s);
}

uint64_t granularity_from(double cold_s, double warm_s, const std::vector<double>& at_distance_s) {
    if (warm_s <= 0 || cold_s < 3 * warm_s)
        return 0;
    // Past a block boundary every farther write lands in a new block too: the
    // boundary is where the writes turn cold and stay cold. A lone slow write
    // before it is noise, not a boundary.
    const double threshold = std::sqrt(cold_s * warm_s);
    uint64_t granularity = max_granularity;
    uint64_t distance = min_granularity << at_distance_s.size();
    for (auto t = at_distance_s.rbegin(); t != at_distance_s.rend(); ++t) {
        distance /= 2;
        if (*t <= threshold)
            break;
        granularity = distance;
    }
    return granularity;
}

// Where the reads left zero writes unknown, but not as a backend that discards
// them or a disk warm already reads (under 0.85x by the median): more pairs,
// each a read of never-written space and at once a zero write again at its
// stride's start, which the probe wrote. Their places are in the stride's second
// quarter, short of the warm place by a backend block: nobody writes them, and
// each round reads its own part of it, so that no cache between serves a read of
// a place read before. Not stride 0: the read of never-written space covered it.
namespace {

constexpr unsigned extra_read_rounds = 3;
constexpr double unclear_from = 0.85;

bool unclear_by_reads(const ColdProbe& probe) {
    return probe.zero_writes == ZeroWrites::unknown && probe.zero_over_never >= unclear_from;
}

Result<void> time_hole_pairs(int fd, unsigned char* buffer, const std::vector<uint64_t>& starts,
                             uint64_t stride, unsigned round, std::mt19937_64& draw,
                             const SomeoneElse& someone_else, std::vector<double>& warm_s,
                             std::vector<double>& never_s) {
    const uint64_t lo = stride / 4, hi = stride / 2 - max_granularity;
    const uint64_t part =
        stride >= (32ULL << 20) ? (hi - lo) / min_granularity / extra_read_rounds : 0;
    if (part == 0)
        return {};
    for (size_t i = 1; i < starts.size(); ++i) {
        const uint64_t at = starts[i] + lo + (round * part + draw() % part) * min_granularity;
        auto never = timed_read(fd, buffer, at);
        if (!never)
            return never.error();
        auto again = timed_rewrite(fd, buffer, starts[i], someone_else);
        if (!again)
            return again.error();
        never_s.push_back(*never);
        warm_s.push_back(*again);
    }
    return {};
}

} // namespace

Result<ColdProbe> probe_cold(const Device& device, const ProbeOptions& options) {
    const auto& g = device.geometry();
    ColdProbe out;
    const uint64_t written_before = t_written_bytes;
    out.strides = probe_strides(g.size_bytes, options.samples);
    if (out.strides == 0)
        return Error{-EINVAL, "too small to probe: " + std::to_string(g.size_bytes) +
                                  " bytes (8 MiB at least)"};
    const ProbeQuiet::Hold quiet(ProbeQuiet::process());
    const int fd = device.fd();

    // A fresh place per stride, read, then written: three quarters of a stride on or
    // further, in its last quarter but for its last 4 MiB (past the warm place at half
    // a stride and its shift of up to 2 MiB, in another backend block than the next
    // stride's start), at a place this run draws, so that places an earlier probe
    // wrote are not taken for the disk. 3 MiB into the region in a stride under 16 MiB.
    const uint64_t stride = stride_bytes(g.size_bytes, out.strides);
    const uint64_t fresh_offset = stride >= (16ULL << 20) ? stride / 4 * 3 : never_read_at;
    // A first write past the largest block told apart, short of the warm place.
    constexpr uint64_t far_offset = max_granularity + (1ULL << 20);
    const uint64_t room =
        stride >= (16ULL << 20) ? (stride - fresh_offset - max_granularity) / min_granularity : 0;
    std::mt19937_64 draw(static_cast<uint64_t>(Clock::now().time_since_epoch().count()));
    std::vector<uint64_t> fresh;
    for (const auto start : cold_offsets(g.size_bytes, out.strides))
        fresh.push_back(start + fresh_offset + (room ? draw() % room * min_granularity : 0));

    // Never-written space reads first, before any write of ours, and short of the
    // fresh places: each is read first below.
    const uint64_t read_bytes =
        std::min({options.zero_read_bytes, g.size_bytes, fresh_offset}) / (1 << 20) * (1 << 20);
    if (read_bytes) {
        auto big = aligned_buffer(1 << 20);
        if (!big)
            return big.error();
        const auto start = Clock::now();
        for (uint64_t at = 0; at < read_bytes; at += 1 << 20)
            if (auto r = read_fully(fd, big->get(), 1 << 20, at); !r)
                return r.error();
        const double took = std::chrono::duration<double>(Clock::now() - start).count();
        out.zero_read_bytes_per_s = took > 0 ? static_cast<double>(read_bytes) / took : 0;
    }

    auto buffer = aligned_buffer(probe_io_bytes);
    if (!buffer)
        return buffer.error();
    std::vector<double> cold;
    std::vector<Calibration> regions;
    const auto offsets = cold_offsets(g.size_bytes, out.strides);
    std::vector<double> more_warm, more_never;
    std::vector<double> fresh_first; // the first writes at the fresh places
    for (size_t i = 0; i < offsets.size(); ++i) {
        if (i < options.calibration_regions) {
            auto region = calibrate(
                fd, buffer->get(), offsets[i], fresh[i],
                i ? std::optional(offsets[i - 1]) : std::nullopt, options.someone_else,
                stride >= (16ULL << 20) ? std::optional(offsets[i] + far_offset) : std::nullopt);
            if (!region)
                return region.error();
            cold.push_back(region->first);
            regions.push_back(*region);
        } else {
            // Past the regions: a read of never-written space too, and the place again.
            auto never = timed_read(fd, buffer->get(), fresh[i]);
            if (!never)
                return never.error();
            auto first = timed_rewrite(fd, buffer->get(), offsets[i], options.someone_else);
            if (!first)
                return first.error();
            auto again = timed_rewrite(fd, buffer->get(), offsets[i], options.someone_else);
            if (!again)
                return again.error();
            cold.push_back(*first);
            more_never.push_back(*never);
            more_warm.push_back(*again);
        }
        auto first = timed_rewrite(fd, buffer->get(), fresh[i], options.someone_else);
        if (!first)
            return first.error();
        fresh_first.push_back(*first);
    }
    out.cold = summarize(cold);
    judge_regions(out, regions, more_warm, more_never);
    for (unsigned round = 0; round < extra_read_rounds && unclear_by_reads(out); ++round) {
        const size_t had = more_never.size();
        if (auto timed = time_hole_pairs(fd, buffer->get(), offsets, stride, round, draw,
                                         options.someone_else, more_warm, more_never);
            !timed)
            return timed.error();
        if (more_never.size() == had)
            break;
        judge_regions(out, regions, more_warm, more_never);
    }
    const auto slow = [&](double t) { return t >= 3 * out.rewrite.p50_s; };
    out.cold_places =
        static_cast<unsigned>(std::count_if(cold.begin(), cold.end(), slow) +
                              std::count_if(fresh_first.begin(), fresh_first.end(), slow));
    out.written_bytes = t_written_bytes - written_before;
    return out;
}

Result<ColdProbe> probe_regions(const Device& device, const std::vector<uint64_t>& regions,
                                const SomeoneElse& someone_else, bool data_allowed) {
    if (regions.empty())
        return Error{-EINVAL, "no region to probe"};
    const ProbeQuiet::Hold quiet(ProbeQuiet::process());
    auto buffer = aligned_buffer(data_allowed ? pair_io_bytes : probe_io_bytes);
    if (!buffer)
        return buffer.error();
    ColdProbe out;
    std::vector<double> cold;
    std::vector<Calibration> measured;
    DataPairs pairs;
    for (size_t i = 0; i < regions.size(); ++i) {
        const uint64_t offset = regions[i];
        auto region = calibrate(device.fd(), buffer->get(), offset, offset + never_read_at,
                                i ? std::optional(regions[i - 1]) : std::nullopt, someone_else);
        if (!region)
            return region.error();
        cold.push_back(region->first);
        measured.push_back(*region);
        if (data_allowed)
            if (auto timed =
                    time_data_pairs(device.fd(), buffer->get(), offset, someone_else, pairs);
                !timed)
                return timed.error();
    }
    out.cold = summarize(cold);
    judge_regions(out, measured);
    if (data_allowed)
        judge_zero_writes_by_data(out, pairs.zero_again, pairs.data_again);
    return out;
}

void judge_allocation(ColdProbe& probe, const std::vector<double>& first_s,
                      const std::vector<double>& beside_s, const std::vector<double>& again_s) {
    probe.beside = summarize(beside_s);
    size_t n = std::min({first_s.size(), beside_s.size(), again_s.size()});
    if (n == 0 || !has_penalty(probe)) {
        probe.allocation = Allocation::unknown;
        probe.allocation_note = "unknown: no first-write penalty to tell by";
        return;
    }
    // A region warm before its first write (written by someone before) tells
    // nothing of what a first write does: left out.
    size_t warm = 0, counted_regions = 0;
    for (size_t i = 0; i < n; ++i) {
        if (first_s[i] < 3 * again_s[i])
            continue;
        ++counted_regions;
        if (beside_s[i] <= std::sqrt(first_s[i] * again_s[i]))
            ++warm;
    }
    std::string counted = std::to_string(warm) + " of " + std::to_string(counted_regions) +
                          " writes beside a first write were warm";
    if (counted_regions < n)
        counted += " (" + std::to_string(n - counted_regions) + " of " + std::to_string(n) +
                   " regions warm before: left out)";
    if (counted_regions < std::min<size_t>(n, 4)) {
        probe.allocation = Allocation::unknown;
        probe.allocation_note = counted + ": too few cold regions to tell";
        return;
    }
    n = counted_regions;
    if (4 * warm >= 3 * n && probe.granularity_bytes) {
        probe.allocation = Allocation::whole_block;
        probe.allocation_note = counted + ": a first write warms its whole block";
    } else if (4 * (n - warm) >= 3 * n) {
        probe.allocation = Allocation::per_sector;
        probe.allocation_note = counted + ": only the sectors written are warm";
        if (probe.granularity_bytes)
            probe.granularity_note += " (every new sector is cold: not a block size)";
    } else {
        probe.allocation = Allocation::unknown;
        probe.allocation_note = counted + ": too mixed to tell";
    }
}

Result<WarmProbe> probe_warm(const Device& device, unsigned strides,
                             const SomeoneElse& someone_else, uint64_t shift) {
    const ProbeQuiet::Hold quiet(ProbeQuiet::process());
    auto buffer = aligned_buffer(probe_io_bytes);
    if (!buffer)
        return buffer.error();
    const auto size = device.geometry().size_bytes;
    const auto places = warm_offsets(size, strides);
    const auto references = cold_offsets(size, strides);
    std::vector<double> warm, reference, ratios;
    for (size_t i = 0; i < places.size(); ++i) {
        auto r = timed_rewrite(device.fd(), buffer->get(), references[i], someone_else);
        if (!r)
            return r.error();
        auto t = timed_rewrite(device.fd(), buffer->get(), places[i] + shift, someone_else);
        if (!t)
            return t.error();
        reference.push_back(*r);
        warm.push_back(*t);
        if (*r > 0)
            ratios.push_back(*t / *r);
    }
    WarmProbe out{summarize(warm), summarize(reference), summarize(ratios).p50_s};
    return out;
}

nlohmann::json to_json(const ProbeLatency& s) {
    return {{"p50_seconds", s.p50_s}, {"p99_seconds", s.p99_s}, {"samples", s.samples}};
}

namespace {

ProbeLatency latency_from(const nlohmann::json& j) {
    ProbeLatency s;
    s.p50_s = j.value("p50_seconds", 0.0);
    s.p99_s = j.value("p99_seconds", 0.0);
    s.samples = j.value("samples", 0u);
    return s;
}

} // namespace

nlohmann::json to_json(const ProbeFigures& f) {
    if (!f.cold)
        return nullptr;
    const auto& c = *f.cold;
    nlohmann::json j = {{"zero_read_bytes_per_s", c.zero_read_bytes_per_s},
                        {"cold", to_json(c.cold)},
                        {"rewrite", to_json(c.rewrite)},
                        {"granularity_bytes", c.granularity_bytes},
                        {"granularity_note", c.granularity_note},
                        {"strides", c.strides},
                        {"beside", to_json(c.beside)},
                        {"allocation", std::string(to_string(c.allocation))},
                        {"allocation_note", c.allocation_note},
                        {"first_write_penalty", penalty_ratio(c.cold, c.rewrite)},
                        {"never_read", to_json(c.never_read)},
                        {"zero_writes", std::string(to_string(c.zero_writes))},
                        {"zero_writes_note", c.zero_writes_note},
                        {"zero_over_never", c.zero_over_never},
                        {"cold_places", c.cold_places},
                        {"bookkeeping", c.bookkeeping},
                        {"hole_reads", c.hole_reads},
                        {"read_pairs", c.read_pairs},
                        {"zero_writes_tell_nothing", zero_writes_tell_nothing(c)},
                        {"warm", nullptr},
                        {"warm_reference", nullptr},
                        {"warm_over_reference", nullptr},
                        {"penalty_ratio", nullptr},
                        {"warming_stuck", nullptr}};
    if (f.warm) {
        j["warm"] = to_json(f.warm->warm);
        j["warm_reference"] = to_json(f.warm->reference);
        j["warm_over_reference"] = f.warm->ratio_p50;
        j["penalty_ratio"] = penalty_ratio(c.cold, f.warm->warm);
        j["warming_stuck"] = !still_cold(c, *f.warm);
    }
    return j;
}

ProbeFigures probe_figures_from(const nlohmann::json& j) {
    ProbeFigures f;
    if (!j.is_object() || !j.contains("cold"))
        return f;
    ColdProbe c;
    c.zero_read_bytes_per_s = j.value("zero_read_bytes_per_s", 0.0);
    c.cold = latency_from(j["cold"]);
    c.rewrite = latency_from(j.value("rewrite", nlohmann::json::object()));
    c.granularity_bytes = j.value("granularity_bytes", uint64_t{0});
    c.granularity_note = j.value("granularity_note", std::string());
    c.strides = j.value("strides", 0u);
    c.beside = latency_from(j.value("beside", nlohmann::json::object()));
    const auto allocation = j.value("allocation", std::string());
    c.allocation = parse_name<Allocation>(allocation).value_or(Allocation::unknown);
    c.allocation_note = j.value("allocation_note", std::string());
    c.never_read = latency_from(j.value("never_read", nlohmann::json::object()));
    const auto zero_writes = j.value("zero_writes", std::string());
    c.zero_writes = parse_name<ZeroWrites>(zero_writes).value_or(ZeroWrites::unknown);
    c.zero_writes_note = j.value("zero_writes_note", std::string());
    c.zero_over_never = j.value("zero_over_never", 0.0);
    c.cold_places = j.value("cold_places", 0u);
    c.bookkeeping = j.value("bookkeeping", false);
    c.hole_reads = j.value("hole_reads", 0u);
    c.read_pairs = j.value("read_pairs", 0u);
    f.cold = c;
    if (j.contains("warm") && j["warm"].is_object()) {
        WarmProbe w;
        w.warm = latency_from(j["warm"]);
        if (j.contains("warm_reference") && j["warm_reference"].is_object())
            w.reference = latency_from(j["warm_reference"]);
        w.ratio_p50 = j.value("warm_over_reference", 0.0);
        f.warm = w;
    }
    return f;
}

} // namespace prewarmd
