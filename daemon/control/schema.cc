#include "control/schema.hh"

#include <algorithm>
#include <array>
#include <cerrno>

#include "base/units.hh"
#include "control/choices.hh"

namespace prewarmd {
namespace {

constexpr uint64_t max_rate = uint64_t{1} << 40; // 1 TiB/s: beyond it, a mistake

constexpr std::array<ActionSpec, 5> actions{{
    {DiskAction::start, "start", "warm it (resumes from its checkpoint)", true},
    {DiskAction::pause, "pause", "hold its job, the disk kept open"},
    {DiskAction::resume, "resume", "go on with a paused job"},
    {DiskAction::cancel, "cancel", "end its job"},
    {DiskAction::release, "release", "end its job and close the disk within a second"},
}};

constexpr auto modes = names_only(mode_names);
constexpr auto auto_policies = names_only(auto_prefill_names);

using K = Field::Kind;

constexpr uint64_t max_deadline_s = 7 * 24 * 3600; // a week: beyond it, a mistake

constexpr std::array<Field, 5> start{{
    {.key = "mode",
     .cli = "mode",
     .section = "prefill",
     .file_key = "mode",
     .kind = K::choice,
     .dbus_type = "s",
     .choices = modes,
     .example = "zero",
     .help = "what the job does"},
    {.key = "rate_bytes_per_s",
     .cli = "rate",
     .kind = K::rate,
     .dbus_type = "t",
     .max = max_rate,
     .example = "50MiB/s",
     .help = "its own rate, outside the shared one"},
    {.key = "queue_depth",
     .cli = "queue-depth",
     .section = "prefill",
     .file_key = "queue_depth",
     .kind = K::count,
     .dbus_type = "u",
     .min = 1,
     .max = 64,
     .example = "8",
     .help = "chunks in flight"},
    {.key = "within_s",
     .cli = "by",
     .kind = K::duration,
     .dbus_type = "t",
     .min = 1,
     .max = max_deadline_s,
     .example = "30min",
     .help = "warm within this long from now, paced to end then"},
    {.key = "deadline",
     .cli = "deadline",
     .kind = K::instant,
     .dbus_type = "s",
     .min = 1,
     .max = max_deadline_s,
     .example = "2026-12-08T12:00:00Z",
     .help = "warm by this time (RFC 3339), paced to end then"},
}};

constexpr std::array<Field, 3> settings{{
    {.key = "total_rate_bytes_per_s",
     .property = "TotalRateBytesPerSecond",
     .cli = "rate",
     .section = "prefill",
     .file_key = "total_rate",
     .kind = K::rate,
     .dbus_type = "t",
     .max = max_rate,
     .example = "200MiB/s",
     .help = "the rate running jobs share"},
    {.key = "max_parallel",
     .property = "MaxParallel",
     .cli = "max-parallel",
     .section = "prefill",
     .file_key = "max_parallel",
     .kind = K::count,
     .dbus_type = "u",
     .min = 1,
     .max = 64,
     .example = "2",
     .help = "jobs at once"},
    {.key = "auto_prefill",
     .property = "AutoPrefill",
     .cli = "auto",
     .section = "prefill",
     .file_key = "auto_prefill",
     .kind = K::choice,
     .dbus_type = "s",
     .choices = auto_policies,
     .example = "blank",
     .help = "which disks are warmed by themselves"},
}};

} // namespace

std::span<const ActionSpec> action_specs() {
    return actions;
}

const ActionSpec& spec_of(DiskAction action) {
    return *std::find_if(actions.begin(), actions.end(),
                         [&](const ActionSpec& a) { return a.action == action; });
}

std::span<const Field> start_fields() {
    return start;
}

std::span<const Field> setting_fields() {
    return settings;
}

const Field* field_by_key(std::span<const Field> fields, std::string_view key) {
    const auto f = std::find_if(fields.begin(), fields.end(),
                                [&](const Field& field) { return field.key == key; });
    return f == fields.end() ? nullptr : &*f;
}

const Field* field_by_property(std::span<const Field> fields, std::string_view property) {
    const auto f = std::find_if(fields.begin(), fields.end(), [&](const Field& field) {
        return !field.property.empty() && field.property == property;
    });
    return f == fields.end() ? nullptr : &*f;
}

const Field* field_by_cli(std::span<const Field> fields, std::string_view cli) {
    const auto f = std::find_if(fields.begin(), fields.end(),
                                [&](const Field& field) { return field.cli == cli; });
    return f == fields.end() ? nullptr : &*f;
}

std::string field_keys(std::span<const Field> fields) {
    std::string out;
    for (const auto& f : fields)
        out += (out.empty() ? "" : ", ") + std::string(f.key);
    return out;
}

std::string field_help(const Field& f) {
    switch (f.kind) {
    case Field::Kind::choice:
        return std::string(f.help) + ": " + joined_words(f.choices, " or ");
    case Field::Kind::count:
        return std::string(f.help) + ", " + std::to_string(f.min) + " to " + std::to_string(f.max);
    case Field::Kind::rate:
        return std::string(f.help) + ", e.g. " + std::string(f.example) + " or unlimited";
    case Field::Kind::duration:
        return std::string(f.help) + ", e.g. " + std::string(f.example) + ", at most " +
               format_duration(std::chrono::seconds(f.max));
    case Field::Kind::instant:
        return std::string(f.help) + ", e.g. " + std::string(f.example) + ", at most " +
               format_duration(std::chrono::seconds(f.max)) + " from now";
    }
    return std::string(f.help);
}

Result<FieldValue> check_value(const Field& f, const FieldValue& value) {
    const std::string name(f.key);
    if (f.kind == Field::Kind::choice) {
        const auto* word = std::get_if<std::string>(&value);
        if (!word)
            return Error{-EDOM, name + " is a string"};
        if (std::find(f.choices.begin(), f.choices.end(), *word) == f.choices.end())
            return Error{-EINVAL, name + " is one of " + joined_words(f.choices, ", ")};
        return value;
    }
    if (f.kind == Field::Kind::instant) {
        const auto* text = std::get_if<std::string>(&value);
        if (!text)
            return Error{-EDOM, name + " is a string"};
        auto at = parse_rfc3339(*text);
        if (!at)
            return Error{-EINVAL, name + ": " + at.error().message};
        const int64_t from_now = *at - now_unix();
        if (from_now < static_cast<int64_t>(f.min) || from_now > static_cast<int64_t>(f.max))
            return Error{-EINVAL, name + " is from " + std::to_string(f.min) + " s to " +
                                      format_duration(std::chrono::seconds(f.max)) +
                                      " from now, not " + rfc3339(*at)};
        return FieldValue(static_cast<uint64_t>(*at));
    }
    const auto* n = std::get_if<uint64_t>(&value);
    if (!n)
        return Error{-EDOM, name + " is an integer"};
    if (*n < f.min || *n > f.max)
        return Error{-EINVAL, name + " is from " + std::to_string(f.min) + " to " +
                                  std::to_string(f.max) +
                                  (f.kind == Field::Kind::rate       ? " (0: unlimited)"
                                   : f.kind == Field::Kind::duration ? " seconds"
                                                                     : "")};
    return value;
}

Result<FieldValue> parse_field_text(const Field& f, std::string_view text) {
    switch (f.kind) {
    case Field::Kind::choice:
    case Field::Kind::instant:
        return check_value(f, std::string(text));
    case Field::Kind::count: {
        auto n = parse_count(text, f.min, f.max);
        if (!n)
            return n.error();
        return FieldValue(*n);
    }
    case Field::Kind::rate: {
        auto r = parse_rate_or_unlimited(text);
        if (!r || *r > f.max)
            return Error{-EINVAL, "expected a rate such as " + std::string(f.example) +
                                      " (or \"unlimited\")"};
        return FieldValue(*r);
    }
    case Field::Kind::duration: {
        auto d = parse_duration(text);
        if (!d)
            return Error{-EINVAL, "expected a duration such as " + std::string(f.example)};
        const auto seconds = std::chrono::ceil<std::chrono::seconds>(*d).count();
        return check_value(f, static_cast<uint64_t>(std::max<int64_t>(0, seconds)));
    }
    }
    return Error{-EINVAL, "unknown kind"};
}

} // namespace prewarmd
