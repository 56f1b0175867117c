// What a job is asked to do, whoever asks (the daemon's scheduler, `prewarmd
// prefill`): its kind, the disk or file, the engine's options, the strategy and
// the probes around it. And a job as its caller holds it while it runs.
#pragma once

#include <optional>
#include <string>
#include <variant>

#include "discovery/disk_info.hh"
#include "engine/job.hh"
#include "io/io_engine.hh"
#include "measurement/probe.hh"
#include "safety/filesystem.hh"

namespace prewarmd {

// The kinds of job (docs/architecture.md: where a new one goes).
// The whole disk, or a file: every chunk of it.
struct BlockJob {};
// The free space of a filesystem mounted from the disk, claimed through the
// filesystem and warmed online, keeping `reserve_bytes` available to its users.
struct FilesystemJob {
    FilesystemTarget fs;
    uint64_t reserve_bytes = 0;
};
using JobKind = std::variant<BlockJob, FilesystemJob>;

struct JobSpec {
    std::string identity; // the disk's, as the daemon knows it (and its checkpoints)
    std::string path;     // the node or file a block job opens
    // The daemon's: the disk of the udev event its decision was about. The job
    // opens that disk only (its sequence number) and judges it again through the
    // descriptor (safety/classify.hh); `prewarmd prefill` has none.
    std::optional<DiskInfo> disk;
    JobKind kind = BlockJob{};
    JobOptions options; // mode, rate, checkpoint path, ...
    Strategy strategy = Strategy::full;
    // Asked for: the disk is held to itself (O_EXCL), and one holding data may be
    // warmed too. Otherwise it is shared and the job steps aside for whoever comes.
    bool requested = false;
    // A cold probe before a job that starts from nothing (none yet in
    // `probe_before`), a warm one after a job that ends done.
    bool probe = false;
    ProbeFigures probe_before; // from the record: a resumed job keeps its cold probe
    bool backend_block_auto = false;     // the probe's granularity sets the backend block
    bool backend_block_explicit = false; // the options' backend block, whatever the probe found
    bool chunk_explicit = false;         // a chunk size that does not fit is an error
    IoEngineKind io_engine = IoEngineKind::automatic;
};

std::string_view kind_name(const JobKind& kind); // "block", "filesystem"
// The filesystem a filesystem job warms; nullptr for other kinds.
const FilesystemTarget* filesystem_of(const JobKind& kind);

// A job on its own thread (job/runner.hh), as the scheduler holds it.
class RunningJob {
public:
    virtual ~RunningJob() = default;
    virtual ProgressSnapshot snapshot() const = 0;
    // Pause, resume, stop, a new rate or depth: takes effect on the job's thread.
    virtual void command(JobCommand command) = 0;
    virtual bool finished() const = 0;
    // Its probes so far (cold once measured, warm once done).
    virtual ProbeFigures probe() const { return {}; }
    // Joins the thread; the final snapshot.
    virtual ProgressSnapshot wait() = 0;
};

} // namespace prewarmd
