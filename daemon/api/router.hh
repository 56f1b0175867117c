// The HTTP API without sockets: a request's method, path, headers and body in, a
// status, headers and body out. Routing, 405s with Allow, body validation and
// RFC 9457 problem+json all happen here, so tests and the fuzzer need no server.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/backend.hh"
#include "control/refusal.hh"

namespace prewarmd {

constexpr size_t api_max_body_bytes = 64 * 1024;

struct ApiRequest {
    std::string method;
    std::string path; // without the query
    std::string content_type;
    std::string body;
};

struct ApiResponse {
    int status = 200;
    std::string content_type = "application/json";
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
    bool event_stream = false; // GET /v1/events: the server streams the events
};

class ApiRouter;

// One route: what it answers, and whether it changes anything (then it needs the
// right to: api/access.hh). The disk actions' routes come from control/schema.hh.
struct ApiRoute {
    std::string method;
    std::string path; // segments; {id} stands for a disk id
    bool changes = false;
    ApiResponse (ApiRouter::*handler)(const ApiRequest&, const std::string& id) = nullptr;
    std::optional<DiskAction> action; // POST /v1/disks/{id}/ACTION
};

class ApiRouter {
public:
    explicit ApiRouter(ApiBackend& backend) : m_backend(backend) {}
    ApiResponse handle(const ApiRequest& request);
    static const std::vector<ApiRoute>& routes();
    // The route of a method and path (HEAD as GET), nullptr for none.
    static const ApiRoute* find(std::string_view method, std::string_view path);

private:
    ApiResponse health(const ApiRequest&, const std::string&);
    ApiResponse readiness(const ApiRequest&, const std::string&);
    ApiResponse metrics(const ApiRequest&, const std::string&);
    ApiResponse events(const ApiRequest&, const std::string&);
    ApiResponse list_disks(const ApiRequest&, const std::string&);
    ApiResponse get_disk(const ApiRequest&, const std::string& id);
    ApiResponse disk_action(const ApiRequest& request, const std::string& id);
    ApiResponse probe(const ApiRequest& request, const std::string& id);
    ApiResponse get_settings(const ApiRequest&, const std::string&);
    ApiResponse patch_settings(const ApiRequest& request, const std::string&);
    ApiResponse disk_response(int status, const std::string& id);
    ApiBackend& m_backend;
};

// An RFC 9457 problem: type urn:prewarmd:problem:SLUG, its title and status as
// the refusal's row says (`status`, where not 0: the library's own, for `http`).
ApiResponse problem(Refusal refusal, const std::string& detail, int status = 0);
// A disk id: letters, digits, '.', '_' and '-', at most 200 of them.
bool valid_disk_id(std::string_view id);
// The text of GET /metrics (Prometheus text format 0.0.4).
std::string prometheus_metrics(const std::vector<DiskView>& disks, const ApiSettings& settings,
                               const OutboxFigures& outbox);
std::string disk_json(const DiskView& disk);

} // namespace prewarmd
