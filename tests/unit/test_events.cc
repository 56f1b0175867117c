// The webhooks: the event's form, its Standard Webhooks signature, the outbox that
// keeps events across restarts within its cap, delivery to a receiver, and which
// disk changes make which events.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <mutex>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "events/cloud_event.hh"
#include "events/outbox.hh"
#include "events/webhooks.hh"
#include "service/disk_events.hh"
#include "temp_dir.hh"

using namespace prewarmd;
using namespace std::chrono_literals;

namespace {

void quiet(bool, const std::string&) {}

// Waits up to 10 s for `done`.
template <typename Done>
bool eventually(Done done) {
    for (int i = 0; i < 1000 && !done(); ++i)
        std::this_thread::sleep_for(10ms);
    return done();
}

} // namespace

TEST_CASE("a webhook's signature is Standard Webhooks' own example") {
    // The specification's example: its secret, message id, timestamp, payload, signature.
    const auto key = webhook_key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    REQUIRE(key);
    CHECK(webhook_signature(*key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330,
                            R"({"test": 2432232314})") ==
          "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

TEST_CASE("a webhook key is whsec_ and base64, or the secret's own bytes, 16 at least") {
    CHECK(webhook_key("0123456789abcdef").value() == "0123456789abcdef");
    CHECK_FALSE(webhook_key("short"));
    CHECK_FALSE(webhook_key("whsec_not*base64!"));
    CHECK_FALSE(webhook_key("whsec_c2hvcnQ=")); // "short"
}

TEST_CASE("an event is CloudEvents 1.0 in its structured JSON form") {
    CloudEvent e;
    e.id = new_event_id().value();
    e.type = "org.prewarmd.disk.warm";
    e.source = "prewarmd://m1/disks/xen-51728";
    e.subject = "xen-51728";
    e.time_unix_ms = 1765000000123;
    e.data_json = R"({"id":"xen-51728","state":"warm"})";
    const auto j = nlohmann::json::parse(event_json(e));
    CHECK(j["specversion"] == "1.0");
    CHECK(j["id"] == e.id);
    CHECK(j["type"] == e.type);
    CHECK(j["source"] == e.source);
    CHECK(j["subject"] == e.subject);
    CHECK(j["time"] == "2025-12-06T05:46:40.123Z");
    CHECK(j["datacontenttype"] == "application/json");
    CHECK(j["data"]["state"] == "warm");
    // A random UUID, version 4, never the same twice.
    CHECK(e.id.size() == 36);
    CHECK(e.id[14] == '4');
    CHECK(new_event_id().value() != e.id);
}

TEST_CASE("a webhook URL is http(s) with a host; its path is kept") {
    CHECK(split_webhook_url("https://cp.example:8443/a/b?c=1").value() ==
          std::pair<std::string, std::string>{"https://cp.example:8443", "/a/b?c=1"});
    CHECK(split_webhook_url("http://127.0.0.1:9").value().second == "/");
    CHECK_FALSE(split_webhook_url("ftp://x/"));
    CHECK_FALSE(split_webhook_url("https:///path"));
    CHECK_FALSE(split_webhook_url("cp.example/hook"));
}

TEST_CASE("the backoff doubles from 1 s to 5 min, drawn from its upper half") {
    CHECK(webhook_backoff(1, 0) == 500ms);
    CHECK(webhook_backoff(1, 1) == 1000ms);
    CHECK(webhook_backoff(3, 1) == 4000ms);
    CHECK(webhook_backoff(30, 0) == 150s);
    CHECK(webhook_backoff(30, 1) == 300s);
}

TEST_CASE("the outbox keeps events across a restart, in order, and drops the oldest past its cap") {
    TempDir dir;
    const auto path = dir.file("outbox");
    std::vector<std::string> damaged;
    {
        auto box = std::move(Outbox::open(path, 3, damaged).value());
        for (const char* id : {"a", "b", "c", "d"})
            REQUIRE(box->add("http://r1/", id, 1, std::string("{\"e\":\"") + id + "\"}"));
        REQUIRE(box->add("http://r2/", "x", 1, "{}"));
        CHECK(box->size() == 3);
        CHECK(box->dropped() == 2); // a, b
        struct stat st {};
        REQUIRE(::stat(path.c_str(), &st) == 0);
        CHECK((st.st_mode & 0777) == 0700);
    }
    std::ofstream(path + "/00000000000000000099.json") << "not an entry";
    auto box = std::move(Outbox::open(path, 10, damaged).value());
    CHECK(damaged.size() == 1);
    CHECK(box->size() == 3);
    auto first = box->first("http://r1/");
    REQUIRE(first);
    CHECK(first->id == "c");
    CHECK(first->body == "{\"e\":\"c\"}");
    box->remove(first->seq);
    CHECK(box->first("http://r1/")->id == "d");
    // A receiver no longer named: its events go, counted.
    CHECK(box->keep_only({"http://r2/"}, 10) == 1);
    CHECK(box->size() == 1);
    CHECK(box->first("http://r2/")->id == "x");
    // Added after the reopening: after what was there.
    REQUIRE(box->add("http://r2/", "y", 1, "{}"));
    box->remove(box->first("http://r2/")->seq);
    CHECK(box->first("http://r2/")->id == "y");
}

TEST_CASE("a receiver gets each event signed, and one that fails keeps it in the outbox") {
    TempDir dir;
    httplib::Server server;
    std::mutex mutex;
    std::vector<httplib::Request> got;
    int answer = 500;
    server.Post("/hook", [&](const httplib::Request& req, httplib::Response& res) {
        std::lock_guard lock(mutex);
        got.push_back(req);
        res.status = answer;
    });
    const int port = server.bind_to_any_port("127.0.0.1");
    std::thread serving([&] { server.listen_after_bind(); });
    const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/hook";

    WebhookSettings settings;
    settings.urls = {url};
    settings.key = "0123456789abcdef";
    auto hooks = std::move(Webhooks::start(dir.file("outbox"), settings, quiet).value());
    CloudEvent e;
    e.id = "id-1";
    e.type = "org.prewarmd.disk.warm";
    e.time_unix_ms = 1;
    e.data_json = "{}";
    hooks->post(e);
    CHECK(eventually([&] { return hooks->figures().failed_attempts >= 1; }));
    CHECK(hooks->figures().waiting == 1);
    CHECK(hooks->figures().delivered == 0);
    {
        std::lock_guard lock(mutex);
        answer = 204;
    }
    // Tried again after its backoff (1 s at most, the first time).
    CHECK(eventually([&] { return hooks->figures().delivered == 1; }));
    CHECK(hooks->figures().waiting == 0);
    {
        std::lock_guard lock(mutex);
        REQUIRE(got.size() >= 2);
        const auto& req = got.back();
        CHECK(req.get_header_value("webhook-id") == "id-1");
        CHECK(req.get_header_value("Content-Type") == "application/cloudevents+json");
        const auto timestamp = std::stoll(req.get_header_value("webhook-timestamp"));
        CHECK(req.get_header_value("webhook-signature") ==
              webhook_signature(settings.key, "id-1", timestamp, req.body));
        CHECK(nlohmann::json::parse(req.body)["id"] == "id-1");
    }
    hooks.reset();
    server.stop();
    serving.join();
}

TEST_CASE("a receiver that never answers is cut short when the daemon stops") {
    TempDir dir;
    httplib::Server server;
    std::atomic<bool> release{false};
    server.Post("/hook", [&](const httplib::Request&, httplib::Response& res) {
        while (!release)
            std::this_thread::sleep_for(10ms);
        res.status = 204;
    });
    const int port = server.bind_to_any_port("127.0.0.1");
    std::thread serving([&] { server.listen_after_bind(); });
    WebhookSettings settings;
    settings.urls = {"http://127.0.0.1:" + std::to_string(port) + "/hook"};
    settings.key = "0123456789abcdef";
    auto hooks = std::move(Webhooks::start(dir.file("outbox"), settings, quiet).value());
    CloudEvent e;
    e.id = "id-1";
    e.data_json = "{}";
    const auto posted = std::chrono::steady_clock::now();
    hooks->post(e); // returns at once: the receiver's thread waits for it
    CHECK(std::chrono::steady_clock::now() - posted < 1s);
    std::this_thread::sleep_for(200ms);
    const auto stopping = std::chrono::steady_clock::now();
    hooks.reset();
    CHECK(std::chrono::steady_clock::now() - stopping < 2s);
    release = true;
    server.stop();
    serving.join();
    // Still there for the next start.
    std::vector<std::string> damaged;
    CHECK(Outbox::open(dir.file("outbox"), 10, damaged).value()->size() == 1);
}

TEST_CASE("a disk's changes make the events of its job: started, then how it ended") {
    DiskEvents events;
    DiskView d;
    d.identity = "xen-51728";
    d.state = DiskState::queued;
    CHECK(events.changed(d).empty());
    d.state = DiskState::running;
    CHECK(events.changed(d) == std::vector<std::string>{"started"});
    d.state = DiskState::paused;
    CHECK(events.changed(d).empty());
    d.state = DiskState::running; // resumed: no new start
    CHECK(events.changed(d).empty());
    d.job_ends[JobStatus::stepped_aside] = 1;
    d.state = DiskState::waiting;
    CHECK(events.changed(d) == std::vector<std::string>{"stepped-aside"});
    d.state = DiskState::running;
    CHECK(events.changed(d) == std::vector<std::string>{"started"});
    d.job_ends[JobStatus::warm] = 1;
    d.state = DiskState::warm;
    CHECK(events.changed(d) == std::vector<std::string>{"warm"});
    CHECK(events.changed(d).empty()); // the same again: nothing new
    // Seen for the first time already running (a restart resumed it).
    events.removed(d.identity);
    d.job_ends.clear();
    d.state = DiskState::running;
    CHECK(events.changed(d) == std::vector<std::string>{"started"});
}
