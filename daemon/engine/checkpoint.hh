// A job's checkpoint: which byte ranges of which disk are warm (done and flushed
// to the device), kept in a file with a checksum.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/range_set.hh"
#include "base/result.hh"
#include "measurement/probe.hh"

namespace prewarmd {

struct Checkpoint {
    std::string identity;
    uint64_t size_bytes = 0;
    std::string mode;
    RangeSet done;
    uint64_t written_bytes = 0;
    uint64_t read_bytes = 0;
    uint64_t skipped_bytes = 0;
    bool complete = false;
    ProbeFigures probe; // the cold probe before the job wrote anything, if one was made
};

// The file's text: a header line with the format version and the CRC-32C of the
// JSON body that follows it.
std::string format_checkpoint(const Checkpoint& checkpoint);
// -EBADMSG when the text is damaged, its checksum wrong or a field out of place.
Result<Checkpoint> parse_checkpoint(std::string_view text);

// Whether a checkpoint may be resumed for this disk and mode; says why not.
Result<void> checkpoint_fits(const Checkpoint& checkpoint, const std::string& identity,
                             uint64_t size_bytes, std::string_view mode);

Result<void> save_checkpoint(const std::string& path, const Checkpoint& checkpoint);
// nullopt when there is no file; -EBADMSG when it is damaged.
Result<std::optional<Checkpoint>> load_checkpoint(const std::string& path);

} // namespace prewarmd
