// Faults injected at run time through cowsim's control file, and the grammar of
// that file: one command per line.
//
//   fail  read|write|any DISK [range=START-END|START+LEN] [after=SIZE] [errno=NAME]
//   delay read|write|any DISK DURATION [range=...] [after=SIZE]
//   clear [DISK]            vanish DISK            appear DISK
//   capacity SIZE|unlimited
//
// DISK may be '*' for every disk. `after=SIZE` arms a rule once that many bytes of
// matching operations have been served on the disk since the rule was added.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/result.hh"

namespace cowsim {

enum class OpKind { read, write, any };

struct ByteRange {
    uint64_t begin = 0;
    uint64_t end = std::numeric_limits<uint64_t>::max();
    bool overlaps(uint64_t offset, uint64_t len) const {
        return offset < end && offset + len > begin;
    }
};

struct FaultRule {
    OpKind op = OpKind::any;
    ByteRange range;
    uint64_t after_bytes = 0;
    int err = 0; // positive errno to fail with; 0 for a delay rule
    std::chrono::nanoseconds delay{0};
};

// The rules of one disk; safe to use from every FUSE thread.
class FaultSet {
public:
    struct Verdict {
        int err = 0;
        std::chrono::nanoseconds delay{0};
    };

    void add(const FaultRule& rule);
    void clear();
    size_t size() const;
    // What happens to one operation. Counts its bytes toward rules not yet armed.
    Verdict check(OpKind op, uint64_t offset, uint64_t len);

private:
    struct Armed {
        FaultRule rule;
        uint64_t seen_bytes = 0;
    };
    mutable std::mutex m_mutex;
    std::vector<Armed> m_rules;
};

struct FaultCommand {
    std::string disk;
    FaultRule rule;
};
struct ClearCommand {
    std::string disk; // "*": every disk
};
struct PresenceCommand {
    std::string disk;
    bool present = true;
};
struct CapacityCommand {
    uint64_t bytes = 0; // 0: unlimited
};
using ControlCommand = std::variant<FaultCommand, ClearCommand, PresenceCommand, CapacityCommand>;

// Parses every line of `text` (blank lines and '#' comments allowed). One bad line
// fails the whole text, naming the line, so a write to the control file is all or
// nothing.
prewarmd::Result<std::vector<ControlCommand>> parse_control(std::string_view text);

} // namespace cowsim
