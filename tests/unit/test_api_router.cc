#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "api/router.hh"
#include "fake_api_backend.hh"

using namespace prewarmd;
using json = nlohmann::json;

namespace {

constexpr const char* disk_a = "/v1/disks/xen-vbd-51728-4294967296";

ApiResponse call(ApiRouter& router, std::string method, std::string path, std::string body = {},
                 std::string type = "application/json") {
    return router.handle(
        {std::move(method), std::move(path), body.empty() ? "" : std::move(type), std::move(body)});
}

// The response is RFC 9457 problem+json with this status and problem type.
void check_problem(const ApiResponse& r, int status, const std::string& slug) {
    CHECK(r.status == status);
    CHECK(r.content_type == "application/problem+json");
    const auto body = json::parse(r.body);
    CHECK(body["status"] == status);
    CHECK(body["type"] == "urn:prewarmd:problem:" + slug);
    CHECK(body["title"].is_string());
    CHECK(body["detail"].is_string());
}

} // namespace

TEST_CASE("api: routes, 404 and 405 with Allow") {
    FakeBackend backend;
    ApiRouter router(backend);
    CHECK(call(router, "GET", "/v1/disks").status == 200);
    CHECK(json::parse(call(router, "GET", "/v1/disks").body)["disks"].size() == 2);
    CHECK(call(router, "GET", disk_a).status == 200);
    check_problem(call(router, "GET", "/v1/nothing"), 404, "no-route");
    check_problem(call(router, "GET", "/v1/disks/"), 404, "no-route");
    check_problem(call(router, "GET", "v1/disks"), 404, "no-route");
    check_problem(call(router, "GET", "/v1/disks/x/start/more"), 404, "no-route");

    const auto r = call(router, "DELETE", "/v1/settings");
    check_problem(r, 405, "method-not-allowed");
    REQUIRE(r.headers.size() == 1);
    CHECK(r.headers[0] == std::pair<std::string, std::string>("Allow", "GET, PATCH"));
    check_problem(call(router, "GET", std::string(disk_a) + "/start"), 405, "method-not-allowed");
}

TEST_CASE("api: disk ids") {
    FakeBackend backend;
    ApiRouter router(backend);
    check_problem(call(router, "GET", "/v1/disks/no-such-disk"), 404, "unknown-disk");
    check_problem(call(router, "GET", "/v1/disks/bad!id"), 400, "invalid-id");
    check_problem(call(router, "GET", "/v1/disks/" + std::string(201, 'a')), 400, "invalid-id");
    check_problem(call(router, "POST", "/v1/disks/a%2Fb/start"), 400, "invalid-id");
    CHECK(backend.actions.empty());
    CHECK(valid_disk_id("loop-_var_tmp_x-536870912"));
    CHECK(valid_disk_id(std::string(200, 'a')));
    CHECK_FALSE(valid_disk_id(""));
}

TEST_CASE("api: a disk holds what the operator asks about") {
    FakeBackend backend;
    ApiRouter router(backend);
    const auto r = call(router, "GET", disk_a);
    CHECK(r.content_type == "application/json");
    const auto d = json::parse(r.body);
    CHECK(d["id"] == "xen-vbd-51728-4294967296");
    CHECK(d["name"] == "xvdb");
    CHECK(d["size_bytes"] == 4ull << 30);
    CHECK(d["verdict"] == "eligible");
    CHECK(d["state"] == "discovered");
    for (const char* field : {"facts", "verdict_reasons", "progress", "first_seen", "state_since"})
        CHECK_MESSAGE(d.contains(field), field);
}

TEST_CASE("api: start takes mode, rate and queue depth, all optional") {
    FakeBackend backend;
    ApiRouter router(backend);
    const auto start = std::string(disk_a) + "/start";
    CHECK(call(router, "POST", start).status == 202);
    CHECK_FALSE(backend.last_start.mode);
    CHECK(call(router, "POST", start,
               R"({"mode": "rewrite", "rate_bytes_per_s": 1048576, "queue_depth": 8})")
              .status == 202);
    CHECK(backend.last_start.mode == Mode::rewrite);
    CHECK(backend.last_start.rate_bytes_per_s == 1048576u);
    CHECK(backend.last_start.queue_depth == 8u);
    CHECK(backend.actions.size() == 2);
    CHECK(call(router, "POST", std::string(disk_a) + "/pause").status == 200);
    CHECK(call(router, "POST", std::string(disk_a) + "/cancel", "{}").status == 200);
    CHECK(backend.actions.back().second == DiskAction::cancel);
}

TEST_CASE("api: a bad body is a 4xx and changes nothing") {
    FakeBackend backend;
    ApiRouter router(backend);
    const auto start = std::string(disk_a) + "/start";
    check_problem(call(router, "POST", start, R"({"mode": )"), 400, "malformed-json");
    check_problem(call(router, "POST", start, R"([1, 2])"), 400, "wrong-type");
    check_problem(call(router, "POST", start, R"("start")"), 400, "wrong-type");
    check_problem(call(router, "POST", start, R"({"queue_depth": "8"})"), 400, "wrong-type");
    check_problem(call(router, "POST", start, R"({"queue_depth": 8.5})"), 400, "wrong-type");
    check_problem(call(router, "POST", start, R"({"queue_depth": -1})"), 400, "out-of-range");
    check_problem(call(router, "POST", start, R"({"queue_depth": 65})"), 400, "out-of-range");
    check_problem(call(router, "POST", start, R"({"mode": "shred"})"), 400, "out-of-range");
    check_problem(call(router, "POST", start, R"({"rate_bytes_per_s": 1099511627777})"), 400,
                  "out-of-range");
    check_problem(call(router, "POST", start, R"({"colour": "red"})"), 400, "unknown-field");
    check_problem(call(router, "POST", std::string(disk_a) + "/pause", R"({"mode": "zero"})"), 400,
                  "unknown-field");
    check_problem(call(router, "POST", start, "mode=zero", "application/x-www-form-urlencoded"),
                  415, "unsupported-media-type");
    check_problem(call(router, "POST", start, std::string(70000, ' ')), 413, "body-too-large");
    check_problem(call(router, "POST", start, std::string(20, '[') + std::string(20, ']')), 400,
                  "malformed-json");
    check_problem(call(router, "POST", start, "{\"mode\": \"zero\xff\"}"), 400, "malformed-json");
    CHECK(backend.actions.empty());

    check_problem(call(router, "PATCH", "/v1/settings", R"({"max_parallel": 0})"), 400,
                  "out-of-range");
    check_problem(call(router, "PATCH", "/v1/settings", R"({"auto_prefill": "always"})"), 400,
                  "out-of-range");
    check_problem(call(router, "PATCH", "/v1/settings", R"({"total_rate_bytes_per_s": null})"), 400,
                  "wrong-type");
    // One bad field refuses the whole patch: nothing of it is applied.
    check_problem(call(router, "PATCH", "/v1/settings", R"({"max_parallel": 4, "colour": 1})"), 400,
                  "unknown-field");
    CHECK(backend.updates == 0);
    CHECK(backend.m_settings.max_parallel == 1);
}

TEST_CASE("api: settings patch only what is given") {
    FakeBackend backend;
    ApiRouter router(backend);
    const auto r = call(router, "PATCH", "/v1/settings", R"({"max_parallel": 3})");
    CHECK(r.status == 200);
    const auto s = json::parse(r.body);
    CHECK(s["max_parallel"] == 3);
    CHECK(s["total_rate_bytes_per_s"] == 32 << 20);
    CHECK(s["auto_prefill"] == "blank");
    CHECK(json::parse(call(router, "PATCH", "/v1/settings", R"({"auto_prefill": "never"})")
                          .body)["auto_prefill"] == "never");
}

TEST_CASE("api: backend errors map to statuses") {
    FakeBackend backend;
    ApiRouter router(backend);
    const auto start = std::string(disk_a) + "/start";
    backend.act_error = -ENOENT;
    check_problem(call(router, "POST", start), 404, "unknown-disk");
    backend.act_error = -ENODEV;
    check_problem(call(router, "POST", start), 409, "not-attached");
    backend.act_error = -EBUSY;
    check_problem(call(router, "POST", start), 409, "refused");
    backend.act_error = -EINVAL;
    check_problem(call(router, "POST", std::string(disk_a) + "/resume"), 409, "wrong-state");
    backend.busy = true;
    check_problem(call(router, "GET", "/v1/disks"), 503, "busy");
    backend.is_ready = false;
    check_problem(call(router, "GET", "/readyz"), 503, "not-ready");
    CHECK(call(router, "GET", "/healthz").status == 200);
}

TEST_CASE("api: metrics in the Prometheus text format") {
    FakeBackend backend;
    auto& d = backend.m_disks[1];
    d.state = DiskState::running;
    d.progress.total_bytes = 1000;
    d.progress.done_bytes = 250;
    d.progress.written_bytes = 200;
    d.progress.write_latency.count = 10;
    d.progress.write_latency.sum_seconds = 0.5;
    d.progress.write_latency.at_or_under.fill(10);
    d.progress.write_latency.at_or_under[0] = 3;
    d.first_seen_unix = 1765000000;
    d.job_ends[JobStatus::stepped_aside] = 2;
    backend.outbox_figures.waiting = 4;
    backend.outbox_figures.dropped = 3;
    const auto text = prometheus_metrics(backend.m_disks, backend.m_settings, backend.outbox_figures);
    const std::string labels = R"({disk="loop-odd\"name",name="loop\\0"})";
    CHECK(text.find("prewarmd_disk_written_bytes_total" + labels + " 200\n") != std::string::npos);
    CHECK(text.find("prewarmd_disk_progress_ratio" + labels + " 0.25\n") != std::string::npos);
    CHECK(text.find(
              R"(prewarmd_disk_state{disk="loop-odd\"name",name="loop\\0",state="running"} 1)") !=
          std::string::npos);
    CHECK(text.find(
              R"(prewarmd_disk_state{disk="loop-odd\"name",name="loop\\0",state="paused"} 0)") !=
          std::string::npos);
    CHECK(
        text.find(
            R"(prewarmd_disk_write_latency_seconds_bucket{disk="loop-odd\"name",name="loop\\0",le="+Inf"} 10)") !=
        std::string::npos);
    CHECK(text.find("prewarmd_disk_write_latency_seconds_count" + labels + " 10\n") !=
          std::string::npos);
    CHECK(text.find("# TYPE prewarmd_disk_write_latency_seconds histogram\n") != std::string::npos);
    CHECK(text.find("prewarmd_max_parallel 1\n") != std::string::npos);
    CHECK(text.find("prewarmd_events_waiting 4\n") != std::string::npos);
    CHECK(text.find("prewarmd_events_dropped_total 3\n") != std::string::npos);
    CHECK(text.find("prewarmd_disk_first_seen_timestamp_seconds" + labels + " 1765000000\n") !=
          std::string::npos);
    // Every outcome has its series, 0 before it first happens, so that increase()
    // sees the first one.
    CHECK(text.find(
              R"(prewarmd_disk_job_ends_total{disk="loop-odd\"name",name="loop\\0",outcome="stepped-aside"} 2)") !=
          std::string::npos);
    CHECK(text.find(
              R"(prewarmd_disk_job_ends_total{disk="loop-odd\"name",name="loop\\0",outcome="failed"} 0)") !=
          std::string::npos);
    CHECK(text.find(R"(outcome="visited")") == std::string::npos);
    CHECK(text.find(R"(outcome="running")") == std::string::npos);
    // Every sample line: a name, optional labels, one value.
    size_t start = 0;
    while (start < text.size()) {
        const auto end = text.find('\n', start);
        REQUIRE(end != std::string::npos);
        const auto line = text.substr(start, end - start);
        if (line[0] != '#')
            CHECK_MESSAGE(line.rfind("prewarmd_", 0) == 0, line);
        start = end + 1;
    }
}

TEST_CASE("api: a name that is not UTF-8 does not break the list") {
    FakeBackend backend;
    backend.m_disks[0].disk.devnode = "/dev/disk/by-label/caf\xe9";
    ApiRouter router(backend);
    const auto r = call(router, "GET", "/v1/disks");
    REQUIRE(r.status == 200);
    CHECK(json::parse(r.body)["disks"][0]["devnode"] == "/dev/disk/by-label/caf\xef\xbf\xbd");
}
