// What one kind of job brings to the runner (job/runner.hh): the device it holds,
// the probe it makes before the job, the chunks it visits for a plan. One source
// file per kind (block_work.cc, filesystem_work.cc), one line in open_work().
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "base/result.hh"
#include "engine/job.hh"
#include "io/device.hh"
#include "job/plan.hh"
#include "job/spec.hh"
#include "measurement/probe.hh"

namespace prewarmd {

class JobWork {
public:
    virtual ~JobWork() = default;
    virtual const Device& device() const = 0;
    // The engine's target: what it warms and watches. Its chunks come from source().
    virtual JobTarget target() = 0;
    // The cold probe before the job, where this kind makes one now (nullopt: none).
    // -EBUSY: someone else is at the disk; the job steps aside before it starts.
    virtual std::optional<Result<ColdProbe>> probe_before(const JobSpec& spec,
                                                          const ProbeFigures& before) = 0;
    // "probe" or "probe in the claim": how messages name it.
    virtual std::string_view probe_name() const = 0;
    // The chunks of a plan, given what the checkpoint says is done already.
    virtual Result<std::unique_ptr<ChunkSource>> source(const Plan& plan, const RangeSet& done,
                                                        uint64_t chunk) = 0;
    // Whether the places a job wrote may be probed after it (the proof of sparse
    // writes, the warm probe): a block job's are its disk's; a filesystem job's
    // are the filesystem's again by then, and its proof is made before, in the claim.
    virtual bool probes_after() const = 0;
    // Whether the places a job writes are its own to fill with non-zero bytes where
    // they read all-zero (claimed free space), should the backend discard zero
    // writes: a filesystem job's are; a block job's are the disk's content.
    virtual bool fills_free_space() const = 0;
    // Who else is at the disk since the last look ("" when nobody): the probes stop.
    virtual std::string arrived() = 0;
};

// Opens what the spec names, for its kind: errors say why not (refused, gone,
// another disk now). `events` takes what the opening has to say.
Result<std::unique_ptr<JobWork>> open_work(const JobSpec& spec, const EventSink& events);

// Whether `device`, just opened, is the disk a decision was about (its udev
// event's sequence number): the same major:minor may name another disk by now.
Result<void> same_disk(const DiskInfo& disk, const Device& device);

// The kinds' own openers.
Result<std::unique_ptr<JobWork>> open_block_work(const JobSpec& spec, const EventSink& events);
Result<std::unique_ptr<JobWork>> open_filesystem_work(const JobSpec& spec, const FilesystemJob& kind,
                                                      const EventSink& events);

} // namespace prewarmd
