#include "api/router.hh"

#include <cerrno>
#include <cstdio>
#include <optional>
#include <variant>

#include <nlohmann/json.hpp>

#include "base/json_text.hh"
#include "base/units.hh"
#include "control/schema.hh"
#include "discovery/identity.hh"

namespace prewarmd {
namespace {

using json = nlohmann::json;

// Deeper than this, a body is refused before parsing: the parser recurses.
constexpr int max_json_depth = 16;

std::vector<std::string_view> segments(std::string_view path) {
    std::vector<std::string_view> out;
    size_t i = 0;
    while (i < path.size()) {
        while (i < path.size() && path[i] == '/')
            ++i;
        const size_t start = i;
        while (i < path.size() && path[i] != '/')
            ++i;
        if (i > start)
            out.push_back(path.substr(start, i - start));
    }
    return out;
}

// Whether `path` fits the route's pattern; its {id} segment when it does. An id
// segment over 512 characters fits no route (a valid one has at most 200).
bool fits(std::string_view pattern, std::string_view path, std::string& id) {
    const auto want = segments(pattern);
    const auto got = segments(path);
    if (want.size() != got.size() || path.empty() || path.front() != '/' ||
        (path.size() > 1 && path.back() == '/'))
        return false;
    for (size_t i = 0; i < want.size(); ++i) {
        if (want[i] == "{id}" && got[i].size() <= 512)
            id = std::string(got[i]);
        else if (want[i] != got[i])
            return false;
    }
    return true;
}

bool too_deep(std::string_view text) {
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            if (++depth > max_json_depth)
                return true;
        } else if (c == '}' || c == ']') {
            --depth;
        }
    }
    return false;
}

// The JSON object of a request body; an empty body is an empty object.
std::variant<json, ApiResponse> object_body(const ApiRequest& request) {
    if (request.body.empty())
        return json::object();
    const auto type = request.content_type.substr(0, request.content_type.find(';'));
    if (type != "application/json")
        return problem(Refusal::unsupported_media_type, "a body must be application/json");
    if (request.body.size() > api_max_body_bytes)
        return problem(Refusal::body_too_large, "a body may hold at most 65536 bytes");
    if (too_deep(request.body))
        return problem(Refusal::malformed_json, "the body nests too deeply");
    json body;
    try {
        body = json::parse(request.body);
    } catch (const json::exception& e) {
        return problem(Refusal::malformed_json, std::string("the body is not JSON: ") + e.what());
    }
    if (!body.is_object())
        return problem(Refusal::wrong_type, "the body must be a JSON object");
    return body;
}

ApiResponse unknown_field(const std::string& key, const std::string& known) {
    return problem(Refusal::unknown_field, "unknown field '" + key + "' (known: " + known + ")");
}

// A body's field checked against its declaration (control/schema.hh).
std::variant<FieldValue, ApiResponse> field_value(const Field& field, const json& value) {
    FieldValue raw;
    if (field.kind == Field::Kind::choice || field.kind == Field::Kind::instant) {
        if (!value.is_string())
            return problem(Refusal::wrong_type, std::string(field.key) + " is a string");
        raw = value.get<std::string>();
    } else {
        if (!value.is_number_integer())
            return problem(Refusal::wrong_type, std::string(field.key) + " is an integer");
        // A negative number is out of every range.
        raw = value.is_number_unsigned() || value.get<int64_t>() >= 0 ? value.get<uint64_t>()
                                                                      : ~uint64_t{0};
    }
    auto checked = check_value(field, raw);
    if (!checked)
        return problem(Refusal::out_of_range, checked.error().message);
    return *checked;
}

ApiResponse error_response(const Error& error) {
    return problem(refusal_of(error), error.message);
}

json settings_json(const ApiSettings& s) {
    return {{"total_rate_bytes_per_s", s.total_rate_bytes_per_s},
            {"max_parallel", s.max_parallel},
            {"auto_prefill", to_string(s.auto_prefill)}};
}

ApiResponse json_response(int status, const json& body) {
    ApiResponse r;
    r.status = status;
    r.body = json_text(body) + "\n";
    return r;
}

// Prometheus label values: backslash, quote and newline escaped.
std::string label(std::string_view value) {
    std::string out;
    for (const char c : value) {
        if (c == '\\' || c == '"')
            out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out;
}

} // namespace

bool valid_disk_id(std::string_view id) {
    return !id.empty() && id.size() <= 200 && url_safe(std::string(id)) == id;
}

ApiResponse problem(Refusal refusal, const std::string& detail, int status) {
    const auto& row = row_of(refusal);
    ApiResponse r;
    r.status = status ? status : row.http_status;
    r.content_type = "application/problem+json";
    r.body = json_text({{"type", "urn:prewarmd:problem:" + std::string(row.slug)},
                        {"title", row.title},
                        {"status", r.status},
                        {"detail", detail}}) +
             "\n";
    return r;
}

const std::vector<ApiRoute>& ApiRouter::routes() {
    static const std::vector<ApiRoute> table = [] {
        std::vector<ApiRoute> t = {
            {"GET", "/healthz", false, &ApiRouter::health, {}},
            {"GET", "/readyz", false, &ApiRouter::readiness, {}},
            {"GET", "/metrics", false, &ApiRouter::metrics, {}},
            {"GET", "/v1/disks", false, &ApiRouter::list_disks, {}},
            {"GET", "/v1/disks/{id}", false, &ApiRouter::get_disk, {}},
        };
        for (const auto& a : action_specs())
            t.push_back({"POST", "/v1/disks/{id}/" + std::string(a.name), true,
                         &ApiRouter::disk_action, a.action});
        t.push_back({"POST", "/v1/disks/{id}/probe", true, &ApiRouter::probe, {}});
        t.push_back({"GET", "/v1/settings", false, &ApiRouter::get_settings, {}});
        t.push_back({"PATCH", "/v1/settings", true, &ApiRouter::patch_settings, {}});
        t.push_back({"GET", "/v1/events", false, &ApiRouter::events, {}});
        return t;
    }();
    return table;
}

const ApiRoute* ApiRouter::find(std::string_view method, std::string_view path) {
    const std::string_view as = method == "HEAD" ? "GET" : method;
    std::string id;
    for (const auto& r : routes())
        if (r.method == as && fits(r.path, path, id))
            return &r;
    return nullptr;
}

namespace {

// A start's deadline, and how its job keeps to it; null without one.
json deadline_json(const DiskView& v) {
    if (!v.deadline)
        return nullptr;
    const auto& p = v.pace;
    const int64_t left = v.deadline->at_unix - now_unix();
    return {
        {"at", rfc3339(v.deadline->at_unix)},
        {"seconds_left", std::max<int64_t>(0, left)},
        {"needed_bytes_per_s", p.needed_bytes_per_s},
        {"rate_bytes_per_s", p.rate_bytes_per_s},
        {"margin_seconds", p.margin_s},
        {"on_track", p.on_track},
        {"can_meet", p.can_meet},
    };
}

} // namespace

std::string disk_json(const DiskView& v) {
    const auto* fs = filesystem_of(v.kind);
    json facts = {
        {"logical_block_bytes", v.facts.logical_block_bytes},
        {"physical_block_bytes", v.facts.physical_block_bytes},
        {"optimal_io_bytes", v.facts.optimal_io_bytes},
        {"rotational", v.facts.rotational},
        {"read_only", v.facts.read_only},
        {"removable", v.facts.removable},
    };
    const auto vdev = xen_vdev(v.disk);
    json out = {
        {"id", v.identity},
        {"name", v.disk.name},
        {"devnode", v.disk.devnode},
        {"attached", v.attached},
        {"size_bytes", v.disk.size_bytes},
        {"diskseq", v.disk.diskseq},
        {"xen_vdev", vdev ? json(*vdev) : json(nullptr)},
        {"facts", facts},
        {"considered", v.matched},
        {"consider_reason", v.match_reason},
        {"verdict", to_string(v.verdict)},
        {"verdict_reasons", v.verdict_reasons},
        {"state", to_string(v.state)},
        {"reason", v.reason},
        {"requested", v.requested},
        {"first_seen", rfc3339(v.first_seen_unix)},
        {"state_since", rfc3339(v.state_since_unix)},
        {"progress", json(v.progress)},
        {"exclusive", v.exclusive},
        {"job_kind", kind_name(v.kind)},
        {"filesystem", fs ? json{{"mount_point", fs->mount_point},
                                 {"fstype", fs->fstype},
                                 {"device", fs->device},
                                 {"fstrim_timer_active", v.fstrim_timer_active}}
                          : json(nullptr)},
        {"adaptive", v.adaptive},
        {"probe", to_json(v.probe)},
        {"deadline", deadline_json(v)},
    };
    out["progress"]["progress_ratio"] = v.progress_ratio();
    return json_text(out);
}

ApiResponse ApiRouter::handle(const ApiRequest& request) {
    std::string id;
    const ApiRoute* route = nullptr;
    std::string allowed;
    for (const auto& r : routes()) {
        std::string found_id;
        if (!fits(r.path, request.path, found_id))
            continue;
        allowed += (allowed.empty() ? "" : ", ") + r.method;
        if (r.method == request.method) {
            route = &r;
            id = found_id;
        }
    }
    if (allowed.empty())
        return problem(Refusal::no_route, "no such route: " + request.path);
    if (!route) {
        auto r = problem(Refusal::method_not_allowed, request.method + " is not allowed here (allowed: " + allowed + ")");
        r.headers.emplace_back("Allow", allowed);
        return r;
    }
    if (route->path.find("{id}") != std::string::npos && !valid_disk_id(id))
        return problem(Refusal::invalid_id, "a disk id has letters, digits, '.', '_' and '-' only, at most 200");
    return (this->*route->handler)(request, id);
}

ApiResponse ApiRouter::health(const ApiRequest&, const std::string&) {
    return json_response(200, {{"status", "ok"}});
}

ApiResponse ApiRouter::readiness(const ApiRequest&, const std::string&) {
    return m_backend.ready()
               ? json_response(200, {{"status", "ready"}})
               : problem(Refusal::not_ready, "discovery has not started yet");
}

ApiResponse ApiRouter::metrics(const ApiRequest&, const std::string&) {
    const auto disks = m_backend.disks();
    const auto settings = m_backend.settings();
    if (!disks || !settings)
        return error_response(!disks ? disks.error() : settings.error());
    ApiResponse r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = prometheus_metrics(*disks, *settings, m_backend.outbox());
    return r;
}

ApiResponse ApiRouter::events(const ApiRequest&, const std::string&) {
    ApiResponse r;
    r.event_stream = true;
    r.content_type = "text/event-stream";
    return r;
}

ApiResponse ApiRouter::list_disks(const ApiRequest&, const std::string&) {
    const auto disks = m_backend.disks();
    if (!disks)
        return error_response(disks.error());
    json list = json::array();
    for (const auto& d : *disks)
        list.push_back(json::parse(disk_json(d)));
    return json_response(200, {{"disks", list}});
}

ApiResponse ApiRouter::get_disk(const ApiRequest&, const std::string& id) {
    return disk_response(200, id);
}

ApiResponse ApiRouter::probe(const ApiRequest& request, const std::string& id) {
    auto parsed = object_body(request);
    if (auto* error = std::get_if<ApiResponse>(&parsed))
        return *error;
    for (const auto& [key, value] : std::get<json>(parsed).items())
        return unknown_field(key, "none");
    if (auto probed = m_backend.probe(id); !probed)
        return error_response(probed.error());
    return disk_response(200, id);
}

ApiResponse ApiRouter::disk_action(const ApiRequest& request, const std::string& id) {
    const auto& route = *find(request.method, request.path);
    const auto& spec = spec_of(*route.action);
    auto parsed = object_body(request);
    if (auto* error = std::get_if<ApiResponse>(&parsed))
        return *error;
    StartRequest start;
    for (const auto& [key, value] : std::get<json>(parsed).items()) {
        const Field* field = spec.takes_start_options ? field_by_key(start_fields(), key) : nullptr;
        if (!field)
            return unknown_field(key,
                                 spec.takes_start_options ? field_keys(start_fields()) : "none");
        auto checked = field_value(*field, value);
        if (auto* error = std::get_if<ApiResponse>(&checked))
            return *error;
        start.set(*field, std::get<FieldValue>(checked));
    }
    if (auto done = m_backend.act(id, spec.action, start); !done)
        return error_response(done.error());
    return disk_response(spec.action == DiskAction::start ? 202 : 200, id);
}

ApiResponse ApiRouter::disk_response(int status, const std::string& id) {
    const auto disk = m_backend.disk(id);
    if (!disk)
        return error_response(disk.error());
    if (!*disk)
        return problem(Refusal::unknown_disk, "no disk " + id);
    ApiResponse r;
    r.status = status;
    r.body = disk_json(**disk) + "\n";
    return r;
}

ApiResponse ApiRouter::get_settings(const ApiRequest&, const std::string&) {
    const auto settings = m_backend.settings();
    return settings ? json_response(200, settings_json(*settings))
                    : error_response(settings.error());
}

ApiResponse ApiRouter::patch_settings(const ApiRequest& request, const std::string&) {
    auto parsed = object_body(request);
    if (auto* error = std::get_if<ApiResponse>(&parsed))
        return *error;
    ApiSettingsPatch patch;
    for (const auto& [key, value] : std::get<json>(parsed).items()) {
        const Field* field = field_by_key(setting_fields(), key);
        if (!field)
            return unknown_field(key, field_keys(setting_fields()));
        auto checked = field_value(*field, value);
        if (auto* error = std::get_if<ApiResponse>(&checked))
            return *error;
        patch.set(*field, std::get<FieldValue>(checked));
    }
    const auto settings = m_backend.update_settings(patch);
    return settings ? json_response(200, settings_json(*settings))
                    : error_response(settings.error());
}

std::string prometheus_metrics(const std::vector<DiskView>& disks, const ApiSettings& settings,
                               const OutboxFigures& box) {
    std::string out;
    const auto family = [&](std::string_view name, std::string_view type, std::string_view help) {
        out += "# HELP " + std::string(name) + " " + std::string(help) + "\n# TYPE " +
               std::string(name) + " " + std::string(type) + "\n";
    };
    const auto labels = [](const DiskView& d) {
        return "disk=\"" + label(d.identity) + "\",name=\"" + label(d.disk.name) + "\"";
    };
    char number[64];
    const auto num = [&](double v) {
        std::snprintf(number, sizeof number, "%.17g", v);
        return std::string(number);
    };
    family("prewarmd_disk_size_bytes", "gauge", "Size of the disk.");
    for (const auto& d : disks)
        out += "prewarmd_disk_size_bytes{" + labels(d) + "} " + std::to_string(d.disk.size_bytes) +
               "\n";
    family("prewarmd_disk_written_bytes_total", "counter",
           "Bytes the disk's current or last job wrote.");
    for (const auto& d : disks)
        out += "prewarmd_disk_written_bytes_total{" + labels(d) + "} " +
               std::to_string(d.progress.written_bytes) + "\n";
    family("prewarmd_disk_skipped_bytes_total", "counter",
           "Bytes the disk's current or last job left alone: they held data.");
    for (const auto& d : disks)
        out += "prewarmd_disk_skipped_bytes_total{" + labels(d) + "} " +
               std::to_string(d.progress.skipped_bytes) + "\n";
    family("prewarmd_disk_progress_ratio", "gauge", "Share of the disk warmed, 0 to 1.");
    for (const auto& d : disks)
        out += "prewarmd_disk_progress_ratio{" + labels(d) + "} " + num(d.progress_ratio()) + "\n";
    family("prewarmd_disk_first_write_seconds", "gauge",
           "Probed write latency: phase cold (before the prefill) or warm (after).");
    for (const auto& d : disks) {
        if (!d.probe.cold)
            continue;
        const auto quantiles = [&](const char* phase, const ProbeLatency& l) {
            out += "prewarmd_disk_first_write_seconds{" + labels(d) + ",phase=\"" + phase +
                   "\",quantile=\"0.5\"} " + num(l.p50_s) + "\n";
            out += "prewarmd_disk_first_write_seconds{" + labels(d) + ",phase=\"" + phase +
                   "\",quantile=\"0.99\"} " + num(l.p99_s) + "\n";
        };
        quantiles("cold", d.probe.cold->cold);
        if (d.probe.warm)
            quantiles("warm", d.probe.warm->warm);
    }
    family("prewarmd_disk_backend_granularity_bytes", "gauge",
           "The backend's allocation granularity as probed; 0: unknown.");
    for (const auto& d : disks)
        if (d.probe.cold)
            out += "prewarmd_disk_backend_granularity_bytes{" + labels(d) + "} " +
                   std::to_string(d.probe.cold->granularity_bytes) + "\n";
    family("prewarmd_disk_backend_whole_block", "gauge",
           "1: a first write warms its whole block; 0: only the sectors written; absent: "
           "unknown.");
    for (const auto& d : disks)
        if (d.probe.cold && d.probe.cold->allocation != Allocation::unknown)
            out += "prewarmd_disk_backend_whole_block{" + labels(d) + "} " +
                   (d.probe.cold->allocation == Allocation::whole_block ? "1" : "0") + "\n";
    family("prewarmd_disk_backend_discards_zero_writes", "gauge",
           "1: this backend discards zero writes (they warm nothing); 0: it keeps them; "
           "absent: unknown.");
    for (const auto& d : disks)
        if (d.probe.cold && d.probe.cold->zero_writes != ZeroWrites::unknown)
            out += "prewarmd_disk_backend_discards_zero_writes{" + labels(d) + "} " +
                   (d.probe.cold->zero_writes == ZeroWrites::discarded ? "1" : "0") + "\n";
    family("prewarmd_disk_rate_bytes_per_second", "gauge", "Warming rate over the last 10 s.");
    for (const auto& d : disks)
        out += "prewarmd_disk_rate_bytes_per_second{" + labels(d) + "} " +
               num(d.progress.rate_10s_bytes_per_s) + "\n";
    family("prewarmd_disk_warm", "gauge",
           "1: the disk's job ended warm, as its proof says; 0: not (yet, or not proven).");
    for (const auto& d : disks)
        out += "prewarmd_disk_warm{" + labels(d) + "} " + (d.state == DiskState::warm ? "1" : "0") +
               "\n";
    family("prewarmd_disk_first_seen_timestamp_seconds", "gauge",
           "When this run of the daemon first saw the disk (Unix time).");
    for (const auto& d : disks)
        out += "prewarmd_disk_first_seen_timestamp_seconds{" + labels(d) + "} " +
               std::to_string(d.first_seen_unix) + "\n";
    family("prewarmd_disk_job_ends_total", "counter",
           "The disk's jobs of this run that ended so, by outcome (stepped-aside: for "
           "another user of the disk).");
    for (const auto& d : disks)
        for (const auto& s : job_status_names)
            if (is_end(s.value) && s.value != JobStatus::visited) {
                const auto n = d.job_ends.find(s.value);
                out += "prewarmd_disk_job_ends_total{" + labels(d) + ",outcome=\"" +
                       std::string(s.name) + "\"} " +
                       std::to_string(n == d.job_ends.end() ? 0 : n->second) + "\n";
            }
    family("prewarmd_disk_state", "gauge", "The disk's job state: 1 for the current one.");
    for (const auto& d : disks)
        for (const auto& s : disk_state_names)
            out += "prewarmd_disk_state{" + labels(d) + ",state=\"" + std::string(s.name) + "\"} " +
                   (d.state == s.value ? "1" : "0") + "\n";
    family("prewarmd_disk_write_latency_seconds", "histogram",
           "Latency of the prefill's writes (the current or last job).");
    for (const auto& d : disks) {
        const auto& l = d.progress.write_latency;
        for (size_t i = 0; i < latency_bounds_seconds.size(); ++i)
            out += "prewarmd_disk_write_latency_seconds_bucket{" + labels(d) + ",le=\"" +
                   num(latency_bounds_seconds[i]) + "\"} " + std::to_string(l.at_or_under[i]) +
                   "\n";
        out += "prewarmd_disk_write_latency_seconds_bucket{" + labels(d) + ",le=\"+Inf\"} " +
               std::to_string(l.count) + "\n";
        out += "prewarmd_disk_write_latency_seconds_sum{" + labels(d) + "} " + num(l.sum_seconds) +
               "\n";
        out += "prewarmd_disk_write_latency_seconds_count{" + labels(d) + "} " +
               std::to_string(l.count) + "\n";
    }
    // A family of one series, unlabelled.
    const auto single = [&](const char* name, const char* type, const char* help,
                            const std::string& value) {
        family(name, type, help);
        out += std::string(name) + " " + value + "\n";
    };
    single("prewarmd_total_rate_bytes_per_second", "gauge",
           "The rate running jobs share; 0: unlimited.",
           std::to_string(settings.total_rate_bytes_per_s));
    single("prewarmd_max_parallel", "gauge", "Jobs that may run at once.",
           std::to_string(settings.max_parallel));
    single("prewarmd_events_waiting", "gauge",
           "Webhook events in the outbox, not yet taken by their receiver.",
           std::to_string(box.waiting));
    single("prewarmd_events_dropped_total", "counter",
           "Webhook events dropped this run: over outbox_max, their receiver no longer named, "
           "or not kept (the state directory could not take them).",
           std::to_string(box.dropped));
    single("prewarmd_events_delivered_total", "counter",
           "Webhook events their receiver took (2xx) this run.", std::to_string(box.delivered));
    single("prewarmd_events_failed_attempts_total", "counter",
           "Webhook deliveries that got no answer, or not a 2xx, this run.",
           std::to_string(box.failed_attempts));
    single("prewarmd_events_last_delivery_seconds", "gauge",
           "From the last delivered event's time to its receiver's 2xx.", num(box.last_delivery_s));
    return out;
}

} // namespace prewarmd
