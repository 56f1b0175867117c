// Why a request or a command is refused, each reason once, with every way it is
// said: the errno a Result carries it by (scheduler commands), the HTTP status
// and RFC 9457 problem type, the D-Bus error, and prewarmctl's exit status. The
// front ends look their answer up here; docs/api.md and api/openapi.yaml list the
// same problem types (tests/unit/test_refusal.cc keeps them in step).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/result.hh"

namespace prewarmd {

// prewarmctl's exit statuses (prewarmctl(1)); `prewarmd prefill` gives the
// outcomes' the same (outcome_exit).
namespace ctl_exit {
inline constexpr int ok = 0, failed = 1, usage = 2, unreachable = 3, unauthorized = 4,
                     unknown_disk = 5, refused = 6, timeout = 7, unproven = 8, not_warmable = 9;
} // namespace ctl_exit

enum class Refusal {
    // A command's own (the scheduler's): said over HTTP and D-Bus alike.
    unknown_disk,
    not_attached,
    refused,
    wrong_state,
    not_recorded,
    busy,
    over_budget,
    deadline_too_near,
    internal,
    // The request's (HTTP, some D-Bus too: its arguments).
    invalid_id,
    malformed_json,
    wrong_type,
    unknown_field,
    out_of_range,
    unsupported_media_type,
    // The transport's and the API's guards (HTTP only).
    transfer_encoding,
    content_encoding,
    content_length,
    body_too_large,
    authorization,
    unauthorized,
    forbidden,
    cross_origin,
    misdirected,
    too_many_requests,
    no_route,
    method_not_allowed,
    not_ready,
    too_many_connections,
    too_many_streams,
    headers_too_large,
    request_timeout,
    http, // the HTTP library's own refusal, with its status
};

struct RefusalRow {
    Refusal refusal;
    int err; // the errno a command's Error carries (negated); 0: none
    int http_status; // `http`: the library's, this only as a stand-in
    std::string_view slug; // the problem type: urn:prewarmd:problem:<slug>
    std::string_view title;
    std::string_view dbus_error; // "": not said over D-Bus
    int ctl_exit;
};

std::span<const RefusalRow> refusal_table();
const RefusalRow& row_of(Refusal refusal);
// A command's error as its refusal, by the errno it carries: any other is internal.
Refusal refusal_of(const Error& error);
// The error a command returns for this refusal.
Error refuse(Refusal refusal, std::string message);
// prewarmctl's exit status for an HTTP answer: by its problem type, else its status.
int ctl_exit_for(int http_status, std::string_view problem_type);

// The outcomes of a job that visited every chunk, by the name the API, D-Bus and
// the journal give them, and the exit status of `prewarmctl wait` and `prewarmd
// prefill` for each: 0 only for warm (docs/engine.md, "Outcomes").
struct OutcomeRow {
    std::string_view name;
    int exit;
};
std::span<const OutcomeRow> outcome_table();
// Its exit status; none for a name that is no outcome.
std::optional<int> outcome_exit(std::string_view name);

} // namespace prewarmd
