// A probe asked for (the API's POST /v1/disks/{id}/probe), outside any job.
#pragma once

#include "base/result.hh"
#include "discovery/disk_info.hh"
#include "measurement/probe.hh"

namespace prewarmd {

// On the caller's thread (the scheduler's begin_probe said it may run): the disk
// opened exclusively and judged as for a job; the warm places when `before` has a
// cold probe, else a cold probe. The figures after it.
Result<ProbeFigures> probe_disk(const DiskInfo& disk, const ProbeFigures& before);

} // namespace prewarmd
