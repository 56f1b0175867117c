// The cold/warm probe: what a first write costs on this disk, whether warming
// removed that cost, and the backend's allocation granularity.
//
// Every write is content-preserving (read 4 KiB with O_DIRECT, write the same
// bytes back), so a probe never changes what the disk reads back; like a prefill
// it runs only under the exclusive open, with nobody else writing.
//
// Places: the disk is cut into K strides; stride i is probed cold at its start,
// and warm half a stride on, in backend blocks the cold probe never touched, so
// that what is measured warm is the prefill's doing, not the probe's own. Each warm
// place is timed back to back with stride i's start, warm for sure by then (the
// cold probe wrote it): the verdict compares the two, which a busy machine slows
// alike, rather than against figures taken at another time.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/names.hh"
#include "base/result.hh"
#include "io/device.hh"

namespace prewarmd {

struct ProbeLatency {
    double p50_s = 0;
    double p99_s = 0;
    unsigned samples = 0;
};

// Before each write the probe asks this; a reason ("the disk was opened by
// mkfs.ext4 (pid 812)") stops it with -EBUSY and that message: someone else is at
// a disk it shares, or the space it probes is not its own any more.
using SomeoneElse = std::function<std::string()>;

struct ProbeOptions {
    unsigned samples = 16;                  // K; fewer on a small disk
    uint64_t zero_read_bytes = 64ULL << 20; // never-written space read to time reads
    unsigned calibration_regions = 8;       // strides also used to find the granularity
    SomeoneElse someone_else;               // none: the disk is the probe's alone
};

// How the backend allocates: a first write to a block makes the whole block warm
// (qcow2 without subclusters, LVM thin, blktap's VHD without a bitmap), or only the
// sectors written (a VHD's sector bitmap): a write beside a first write is cold.
enum class Allocation { unknown, whole_block, per_sector };
inline constexpr std::array<Named<Allocation>, 3> allocation_names{{
    {Allocation::unknown, "unknown"},
    {Allocation::whole_block, "whole-block"},
    {Allocation::per_sector, "per-sector"},
}};
static_assert(names_in_order(allocation_names, Allocation::per_sector));
constexpr std::span<const Named<Allocation>> names_of(Allocation) {
    return allocation_names;
}

// Whether the backend keeps a write of zeros. QEMU's qcow2 with detect-zeroes (and
// XCP-ng's qcow2 driver, which sets it to unmap) discards it: nothing is
// allocated, and an allocated block that reads zeros may even be given back.
// There zero writes warm nothing (docs/engine.md, "Backends that discard zero
// writes"); the probe's own zero writes look warm there too.
enum class ZeroWrites { unknown, kept, discarded };
inline constexpr std::array<Named<ZeroWrites>, 3> zero_writes_names{{
    {ZeroWrites::unknown, "unknown"},
    {ZeroWrites::kept, "kept"},
    {ZeroWrites::discarded, "discarded"},
}};
static_assert(names_in_order(zero_writes_names, ZeroWrites::discarded));
constexpr std::span<const Named<ZeroWrites>> names_of(ZeroWrites) {
    return zero_writes_names;
}

struct ColdProbe {
    double zero_read_bytes_per_s = 0; // reading never-written space
    ProbeLatency cold;                // first writes, one per stride
    ProbeLatency rewrite;             // the calibration places written again at once: warm here
    uint64_t granularity_bytes = 0;   // estimated allocation unit, 64 KiB .. 4 MiB; 0 unknown
    std::string granularity_note;     // how sure, or why unknown
    unsigned strides = 0;             // K as used: the warm probe needs the same
    // Writes 4 KiB beside each calibration region's first write (the faster of two,
    // 4 and 8 KiB on), and the verdict.
    ProbeLatency beside;
    Allocation allocation = Allocation::unknown;
    std::string allocation_note; // the evidence, or why unknown
    // 4 KiB reads of never-written space, one per calibration region, and what the
    // probe found of zero writes, with its evidence.
    ProbeLatency never_read;
    ZeroWrites zero_writes = ZeroWrites::unknown;
    std::string zero_writes_note;
    // A zero write again over such a read, the median pair by pair (0: fewer than
    // 4), the pairs where it costs 1.5x or more (reads of holes, by the look), and
    // the pairs: one per stride, and more where the first ones left it unclear.
    double zero_over_never = 0;
    unsigned hole_reads = 0;
    unsigned read_pairs = 0;
    // First writes that cost 3x the rewrite's p50 or more, of two per stride: at its
    // start, and at a fresh place this run drew (where an earlier probe did not write).
    unsigned cold_places = 0;
    // The first-write penalty spans 8 MiB or more: the backend's bookkeeping (a
    // fresh table), not an allocation of data; it proves neither kept zero writes
    // nor whole blocks (docs/engine.md).
    bool bookkeeping = false;
    uint64_t written_bytes = 0; // the probe's own writes, to tell others' from them
};

// The smallest and largest granularities told apart, and the bytes of one sample.
constexpr uint64_t min_granularity = 64ULL << 10;
constexpr uint64_t max_granularity = 4ULL << 20;
constexpr uint64_t probe_io_bytes = 4096;
// What is written where data, not zeros, is wanted in free space that is the job's
// own: the probe's data writes in a claim, and a filesystem job's fill where zero
// writes are discarded (docs/design.md).
constexpr unsigned char free_space_fill = 0xa5;

// Strides of a disk of that size for K samples (0: too small to probe: each stride
// needs room for a calibration region and a warm place apart from it).
unsigned probe_strides(uint64_t size_bytes, unsigned samples);

// The places: cold ones at each stride's start, warm ones half a stride on.
std::vector<uint64_t> cold_offsets(uint64_t size_bytes, unsigned strides);
std::vector<uint64_t> warm_offsets(uint64_t size_bytes, unsigned strides);

// The warm places, and beside each the reference place (warm for sure).
struct WarmProbe {
    ProbeLatency warm;
    ProbeLatency reference;
    double ratio_p50 = 0; // the median of warm over reference, place by place
};

Result<ColdProbe> probe_cold(const Device& device, const ProbeOptions& options);
// The calibration alone, in 4 MiB regions from `regions` (disk offsets) that
// nobody else writes meanwhile: free space a filesystem job holds in its claim.
// No zero reads and no strides (no warm probe can follow: the places go back to
// the filesystem).
// With `data_allowed`, the regions are the probe's to write any data on (a claim):
// zero writes are judged against data writes there (judge_zero_writes_by_data),
// and each region reads all-zero again at the end.
Result<ColdProbe> probe_regions(const Device& device, const std::vector<uint64_t>& regions,
                                const SomeoneElse& someone_else = {}, bool data_allowed = false);
// `shift`: the warm places that far into their blocks (after a sparse job, which
// wrote each block's start only, the proof is in the middle).
Result<WarmProbe> probe_warm(const Device& device, unsigned strides,
                             const SomeoneElse& someone_else = {}, uint64_t shift = 0);

// The granularity from one region's write times: the cold reference (the region's
// first write), the warm reference (the same place again), and the times of writes
// at 64 KiB, 128 KiB ... 2 MiB from the start. The block boundary is the distance
// from which on every write is cold (nearer the cold reference than the warm, on
// a log scale); none: the block is 4 MiB or more. 0: the references do not differ
// enough to tell (no first-write penalty here).
uint64_t granularity_from(double cold_s, double warm_s, const std::vector<double>& at_distance_s);

// The verdict from the calibration regions: per region, its first write, the
// faster of two writes beside it just after, and the first place again (warm). Regions whose
// first write was not cold (3x the rewrite) are left out: written before, they
// tell nothing; fewer than 4 counted (or all, if fewer): unknown. A write beside
// is warm when nearer the rewrite than the first write on a log scale. Whole-block
// when at least 3 in 4 regions found it warm and the granularity is known;
// per-sector when at least 3 in 4 found it cold; unknown otherwise, or without a
// first-write penalty. Sets `allocation` and `allocation_note`.
void judge_allocation(ColdProbe& probe, const std::vector<double>& first_s,
                      const std::vector<double>& beside_s, const std::vector<double>& again_s);

// Whether zero writes are kept, where the probe may write only zeros: from the
// first-write penalty (a first zero write that costs 3x the second allocated
// something), where each region's first write (`first_s`) also costs 3x a warm
// write timed just before it (`control_s`; the median of the pairs, at least 3:
// a host busy at the wrong moment, or a cache between busy after the read of
// never-written space, slows the control as much); else from a zero write again
// (`again_s`) against a 4 KiB read of
// never-written space (`never_s`), one pair per stride (the median of their
// ratios). A kept zero write is a write to storage, dearer than a read that needs
// none: kept from 1.3x, where a quarter of the places at least say 1.5x or more.
// Never "discarded" from these: a disk warm already reads storage as its writes
// write it, and looks the same (docs/engine.md).
void judge_zero_writes_by_reads(ColdProbe& probe, const std::vector<double>& again_s,
                                const std::vector<double>& never_s,
                                const std::vector<double>& first_s,
                                const std::vector<double>& control_s);
// Where the probe may write any data (a filesystem job's claim): zero writes
// again against data writes again, in the same regions, by the median of the
// pairs' ratios (a host's jitter slows both writes of a pair alike). Both are
// writes to allocated space where zeros are kept; a discarded zero write reaches no
// storage. Discarded under 0.65x, kept from 0.75x, unknown between (the figures:
// docs/engine.md). A "discarded" said wrongly
// costs a fill of free space that reads all-zero; a "kept" said wrongly, a disk
// called warm that is not: the line leans to the first.
void judge_zero_writes_by_data(ColdProbe& probe, const std::vector<double>& zero_again_s,
                               const std::vector<double>& data_again_s);

// What a job keeps of its probes: the cold one before it wrote anything, the warm
// one once it was done. In its record, the API, prewarmctl show and the metrics.
struct ProbeFigures {
    std::optional<ColdProbe> cold;
    std::optional<WarmProbe> warm;
};
nlohmann::json to_json(const ProbeFigures& figures); // null when there is none
nlohmann::json to_json(const ProbeLatency& summary);
ProbeFigures probe_figures_from(const nlohmann::json& j); // empty when not one

// p50 and p99 of the samples (nearest rank).
ProbeLatency summarize(std::vector<double> seconds);

// Cold over warm p50; 0 when either is missing.
double penalty_ratio(const ProbeLatency& cold, const ProbeLatency& warm);

// Whether the cold probe found a first-write penalty at all (cold p50 at least 3x
// the rewrite's): without one, there is nothing for warming to remove.
bool has_penalty(const ColdProbe& cold);
// Whether zero writes change nothing the probe can measure on this disk: no more
// than a tenth of the first writes cost 3x a rewrite, no read of never-written space
// cost under 1/1.5 of a zero write again (one in 16 pairs at most: a host's hiccups),
// the median under 1x (at least 4 regions). There, either every place is allocated already
// (the reads read storage as the writes write it) or the backend discards zero
// writes (neither reaches storage): zeros cannot tell which, and writing them would
// warm nothing in either case. A cold backend that keeps them writes to storage
// where a read of a hole does not (the bed: 1.1x to 3.2x, warm and discarding 0.5x
// to 0.96x; docs/engine.md, "Warm already, or discarded"); a disk cold in places
// shows it at those places.
bool zero_writes_tell_nothing(const ColdProbe& cold);
// Whether a warm probe still looks cold: warming did not stick (a backend that
// drops zero writes, or a disk made sparse again). The warm places over their
// references, nearer the first-write penalty than 1, on a log scale; for a warm
// probe without references (recorded by an older version), the warm places against
// the cold probe's figures.
bool still_cold(const ColdProbe& cold, const WarmProbe& warm);

} // namespace prewarmd
