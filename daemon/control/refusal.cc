#include "control/refusal.hh"

#include <algorithm>
#include <cerrno>

namespace prewarmd {
namespace {

using R = Refusal;
namespace x = ctl_exit;

constexpr std::string_view invalid_args = "org.freedesktop.DBus.Error.InvalidArgs";

// In the enum's order.
constexpr RefusalRow table[] = {
    {R::unknown_disk, ENOENT, 404, "unknown-disk", "Unknown disk",
     "org.prewarmd.Prewarmd1.Error.UnknownDisk", x::unknown_disk},
    {R::not_attached, ENODEV, 409, "not-attached", "Not attached",
     "org.prewarmd.Prewarmd1.Error.NotAttached", x::refused},
    {R::refused, EBUSY, 409, "refused", "Refused", "org.prewarmd.Prewarmd1.Error.Refused",
     x::refused},
    {R::wrong_state, EINVAL, 409, "wrong-state", "Not in that state",
     "org.prewarmd.Prewarmd1.Error.WrongState", x::refused},
    {R::not_recorded, ENOSPC, 507, "not-recorded", "Not recorded",
     "org.prewarmd.Prewarmd1.Error.NotRecorded", x::failed},
    {R::busy, EAGAIN, 503, "busy", "Busy", "org.prewarmd.Prewarmd1.Error.Busy", x::failed},
    {R::over_budget, E2BIG, 422, "over-budget", "Over the memory budget",
     "org.prewarmd.Prewarmd1.Error.OverBudget", x::refused},
    {R::deadline_too_near, ETIME, 422, "deadline-too-near", "Deadline cannot be met",
     "org.prewarmd.Prewarmd1.Error.DeadlineTooNear", x::refused},
    {R::internal, 0, 500, "internal", "Internal error", "org.prewarmd.Prewarmd1.Error.Failed",
     x::failed},
    {R::invalid_id, 0, 400, "invalid-id", "Invalid disk id", invalid_args, x::usage},
    {R::malformed_json, 0, 400, "malformed-json", "Malformed JSON", "", x::usage},
    {R::wrong_type, 0, 400, "wrong-type", "Wrong type", invalid_args, x::usage},
    {R::unknown_field, 0, 400, "unknown-field", "Unknown field", invalid_args, x::usage},
    {R::out_of_range, 0, 400, "out-of-range", "Out of range", invalid_args, x::usage},
    {R::unsupported_media_type, 0, 415, "unsupported-media-type", "Unsupported media type", "",
     x::usage},
    {R::transfer_encoding, 0, 400, "transfer-encoding", "Transfer-Encoding not accepted", "",
     x::usage},
    {R::content_encoding, 0, 415, "content-encoding", "Content-Encoding not accepted", "",
     x::usage},
    {R::content_length, 0, 400, "content-length", "Bad Content-Length", "", x::usage},
    {R::body_too_large, 0, 413, "body-too-large", "Body too large", "", x::usage},
    {R::authorization, 0, 400, "authorization", "Bad Authorization", "", x::usage},
    {R::unauthorized, 0, 401, "unauthorized", "Unauthorized", "", x::unauthorized},
    {R::forbidden, 0, 403, "forbidden", "Forbidden", "", x::unauthorized},
    {R::cross_origin, 0, 403, "cross-origin", "Origin not served", "", x::unauthorized},
    {R::misdirected, 0, 421, "misdirected", "Host not served", "", x::failed},
    {R::too_many_requests, 0, 429, "too-many-requests", "Too many requests", "", x::failed},
    {R::no_route, 0, 404, "no-route", "Not found", "", x::failed},
    {R::method_not_allowed, 0, 405, "method-not-allowed", "Method not allowed", "", x::failed},
    {R::not_ready, 0, 503, "not-ready", "Not ready", "", x::failed},
    {R::too_many_connections, 0, 503, "too-many-connections", "Too many connections", "",
     x::failed},
    {R::too_many_streams, 0, 503, "too-many-streams", "Too many event streams", "", x::failed},
    {R::headers_too_large, 0, 431, "headers-too-large", "Headers too large", "", x::failed},
    {R::request_timeout, 0, 408, "request-timeout", "Request timeout", "", x::failed},
    {R::http, 0, 400, "http", "Request refused", "", x::failed},
};

constexpr bool in_order() {
    for (size_t i = 0; i < std::size(table); ++i)
        if (static_cast<size_t>(table[i].refusal) != i)
            return false;
    return true;
}
static_assert(in_order(), "the refusal table is in the enum's order, a row each");
static_assert(std::size(table) == static_cast<size_t>(R::http) + 1,
              "every refusal has its row");

constexpr OutcomeRow outcomes[] = {
    {"warm", x::ok},
    {"unproven", x::unproven},
    {"not_warmable", x::not_warmable},
};

} // namespace

std::span<const OutcomeRow> outcome_table() {
    return outcomes;
}

std::optional<int> outcome_exit(std::string_view name) {
    for (const auto& o : outcomes)
        if (o.name == name)
            return o.exit;
    return std::nullopt;
}

std::span<const RefusalRow> refusal_table() {
    return table;
}

const RefusalRow& row_of(Refusal refusal) {
    return table[static_cast<size_t>(refusal)];
}

Refusal refusal_of(const Error& error) {
    for (const auto& r : table)
        if (r.err != 0 && -r.err == error.err)
            return r.refusal;
    return R::internal;
}

Error refuse(Refusal refusal, std::string message) {
    const int err = row_of(refusal).err;
    return Error{err ? -err : -EIO, std::move(message)};
}

int ctl_exit_for(int http_status, std::string_view problem_type) {
    constexpr std::string_view prefix = "urn:prewarmd:problem:";
    if (problem_type.starts_with(prefix)) {
        const auto slug = problem_type.substr(prefix.size());
        for (const auto& r : table)
            if (r.slug == slug)
                return r.ctl_exit;
    }
    for (const auto& r : table) // a problem of another version: its status says enough
        if (r.http_status == http_status)
            return r.ctl_exit;
    return x::failed;
}

} // namespace prewarmd
