// What may be asked of a running daemon, declared once: the actions on a disk, the
// options of a start and the settings that may change while it runs, each with its
// names (HTTP and D-Bus key, D-Bus property, prewarmctl word) and its range. The
// HTTP API, D-Bus and prewarmctl read and check values through these tables; the
// daemon's side turns the checked values into its own types.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "base/result.hh"

namespace prewarmd {

enum class DiskAction { start, pause, resume, cancel, release };

struct ActionSpec {
    DiskAction action;
    std::string_view name;    // POST /v1/disks/{id}/NAME, prewarmctl NAME DISK
    std::string_view summary; // for help texts
    bool takes_start_options = false;
};
std::span<const ActionSpec> action_specs();
const ActionSpec& spec_of(DiskAction action);

// A value as it comes: a whole number, or a word.
using FieldValue = std::variant<uint64_t, std::string>;

// One setting or start option, for every front end: the file (config/config.cc
// reads it through this), the API, D-Bus, prewarmctl and prefill's options.
struct Field {
    // A duration: whole seconds. An instant: an RFC 3339 time, from min to max
    // seconds from now, taken as seconds since the epoch.
    enum class Kind { count, rate, duration, instant, choice };
    std::string_view key;      // JSON and D-Bus dictionary key: "max_parallel"
    std::string_view property; // D-Bus property name, "" for none
    std::string_view cli;      // prewarmctl: "max-parallel" (set) or "queue-depth" (--option)
    std::string_view section;  // the file's [section] and key, "" for none: the default
    std::string_view file_key; // of a start option, the setting itself of the others
    Kind kind;
    std::string_view dbus_type;                // its D-Bus signature: "s", "u", "t"
    uint64_t min = 0, max = 0;                 // count, rate (a rate's min is 0: unlimited), duration
    std::span<const std::string_view> choices; // choice
    std::string_view example;                  // for messages: "50MiB/s"
    std::string_view help;                     // what it is, for help texts
};

// An option's help line, from its field: "chunks in flight, 1 to 64", "what the
// job does: zero, rewrite or read", "its own rate, ..., e.g. 50MiB/s or unlimited".
std::string field_help(const Field& field);

// The options of a start: mode, rate_bytes_per_s, queue_depth, within_s, deadline.
std::span<const Field> start_fields();
// The settings that may change at run time: total_rate_bytes_per_s, max_parallel,
// auto_prefill.
std::span<const Field> setting_fields();
const Field* field_by_key(std::span<const Field> fields, std::string_view key);
const Field* field_by_property(std::span<const Field> fields, std::string_view property);
const Field* field_by_cli(std::span<const Field> fields, std::string_view cli);
// "mode, rate_bytes_per_s, queue_depth": for "unknown field" messages.
std::string field_keys(std::span<const Field> fields);

// The value checked against its field: -EINVAL "max_parallel is from 1 to 64" when
// it is out of range, -EDOM "mode is a string" when of the wrong kind.
Result<FieldValue> check_value(const Field& field, const FieldValue& value);
// prewarmctl's words: "50MiB/s" and "unlimited" (rates), "8" (counts), "30min"
// (durations, to whole seconds, rounded up), "2026-12-08T12:00:00Z" (instants),
// "blank".
Result<FieldValue> parse_field_text(const Field& field, std::string_view text);

} // namespace prewarmd
