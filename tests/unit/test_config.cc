#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "base/units.hh"
#include "config/config.hh"
#include "control/schema.hh"
#include "state/state_dir.hh"
#include "temp_dir.hh"

using namespace prewarmd;
using namespace std::chrono_literals;

namespace {

std::string error_of(std::string_view text) {
    const auto r = parse_config(text, "/etc/prewarmd/prewarmd.toml");
    REQUIRE_FALSE(r.ok());
    return r.error().message;
}

// The example, every line uncommented: it must mean exactly the defaults.
std::string uncommented_example() {
    std::istringstream in(example_config());
    std::string out, line;
    while (std::getline(in, line)) {
        // "#key = value" is a setting; "# text" is help.
        if (line.size() > 1 && line[0] == '#' && line[1] != ' ' &&
            line.find("\"name:xvdb\"") == std::string::npos)
            line = line.substr(1);
        out += line + "\n";
    }
    return out;
}

} // namespace

TEST_CASE("an empty config is the defaults") {
    const auto c = parse_config("", "x.toml");
    REQUIRE(c.ok());
    CHECK(c->state_dir == "/var/lib/prewarmd");
    CHECK(c->match == std::vector<std::string>{"xen"});
    CHECK(c->match_rules.size() == 1);
    CHECK(c->attach_grace == 30s);
    CHECK(c->auto_prefill == AutoPrefill::blank);
    CHECK(c->max_parallel == 1);
    CHECK(c->total_rate_bytes_per_s == 200ULL << 20);
    CHECK_FALSE(c->chunk_set);
}

TEST_CASE("every setting parses") {
    const auto c = parse_config(R"(
[daemon]
state_dir = "/srv/prewarmd"
log_level = "debug"
[discovery]
match = ["xen", "name:loop*"]
exclude = ["size:-1GiB"]
attach_grace = "45s"
wait_for_boot = false
[prefill]
auto_prefill = "never"
mode = "rewrite"
chunk = "8MiB"
backend_block = "4MiB"
queue_depth = 16
max_parallel = 2
total_rate = "unlimited"
checkpoint_interval = "2s"
io_engine = "sync"
idle_priority = false
[rates]
"name:xvdb" = "50MiB/s"
"size:1TiB-" = "400MiB/s"
)",
                                "x.toml");
    REQUIRE_MESSAGE(c.ok(), (c.ok() ? "" : c.error().message));
    CHECK(c->state_dir == "/srv/prewarmd");
    CHECK(c->match_rules.size() == 2);
    CHECK(c->exclude_rules.size() == 1);
    CHECK(c->attach_grace == 45s);
    CHECK_FALSE(c->wait_for_boot);
    CHECK(c->auto_prefill == AutoPrefill::never);
    CHECK(c->mode == Mode::rewrite);
    CHECK(c->chunk_bytes == 8ULL << 20);
    CHECK(c->chunk_set);
    CHECK(c->queue_depth == 16);
    CHECK(c->max_parallel == 2);
    CHECK(c->total_rate_bytes_per_s == 0);
    CHECK(c->io_engine == IoEngineKind::sync);
    REQUIRE(c->rates.size() == 2);
    CHECK(c->rates[0].rule.text == "name:xvdb");
    CHECK(c->rates[1].rate_bytes_per_s == 400ULL << 20);
}

TEST_CASE("errors name the file, the line and the key") {
    CHECK(error_of("[prefill]\nmax_parallel = 0\n") ==
          "/etc/prewarmd/prewarmd.toml:2: [prefill] max_parallel: expected a whole number from 1 "
          "to 64, not 0");
    CHECK(error_of("[prefill]\n\nmax_paralel = 2\n") ==
          "/etc/prewarmd/prewarmd.toml:3: [prefill] max_paralel: unknown key (auto_prefill, mode, "
          "strategy, chunk, backend_block, queue_depth, max_parallel, filesystem_reserve, "
          "total_rate, "
          "checkpoint_interval, "
          "io_engine, idle_priority, probe, adaptive, adaptive_watch)");
    CHECK(error_of("[prefil]\nmode = \"zero\"\n").find(":1: [prefil]: unknown section") !=
          std::string::npos);
    CHECK(error_of("[prefill]\ntotal_rate = 100\n")
              .find(":2: [prefill] total_rate: expected a string, such as \"200MiB/s\"") !=
          std::string::npos);
    CHECK(error_of("[prefill]\ntotal_rate = \"100MiB\"\n").find("a size per second") !=
          std::string::npos);
    CHECK(error_of("[prefill]\nmode = \"shred\"\n")
              .find("expected one of \"zero\", \"rewrite\", \"read\"") != std::string::npos);
    CHECK(error_of("[discovery]\nmatch = [\"xen\", \"colour:red\"]\n")
              .find(":2: [discovery] match: match rule 'colour:red'") != std::string::npos);
    CHECK(error_of("[discovery]\nattach_grace = \"30\"\n").find("a unit is needed") !=
          std::string::npos);
    CHECK(error_of("[daemon]\nstate_dir = \"relative\"\n").find("absolute path") !=
          std::string::npos);
    CHECK(error_of("[rates]\n\"name:xvdb\" = \"fast\"\n").find(":2: [rates] \"name:xvdb\":") !=
          std::string::npos);
    CHECK(error_of("mode = \"zero\"\n").find("unknown section") != std::string::npos);
    CHECK(error_of("[prefill\n").find("/etc/prewarmd/prewarmd.toml:1:") == 0);
}

TEST_CASE("[events]: webhook URLs are http(s), and signed: they need secret_file") {
    const auto config = parse_config("[events]\nwebhook = [\"https://cp.example/h\"]\n"
                                     "secret_file = \"/etc/prewarmd/webhook.secret\"\n"
                                     "outbox_max = 50\n",
                                     "x.toml");
    REQUIRE(config);
    CHECK(config->events_webhooks == std::vector<std::string>{"https://cp.example/h"});
    CHECK(config->events_outbox_max == 50);
    CHECK(error_of("[events]\nwebhook = [\"https://cp.example/h\"]\n")
              .find("[events] webhook needs secret_file") != std::string::npos);
    CHECK(error_of("[events]\nwebhook = [\"ftp://cp.example/h\"]\nsecret_file = \"/s\"\n")
              .find(":2: [events] webhook: \"ftp://cp.example/h\": expected an http:// or "
                    "https:// URL") != std::string::npos);
    CHECK(error_of("[events]\noutbox_max = 0\n").find("from 1 to 10000") != std::string::npos);
    // A reload applies them all.
    Config before;
    CHECK(plan_reload(before, *config).need_restart.empty());
    CHECK(plan_reload(before, *config).applied.size() == 3);
}

TEST_CASE("the jobs' buffers have one budget: the file may not exceed it, the unit stays above") {
    CHECK(buffer_budget_bytes == 256ULL << 20);
    CHECK(parse_config("[prefill]\nmax_parallel = 8\nqueue_depth = 8\n", "f").ok()); // 256 MiB
    CHECK(error_of("[prefill]\nmax_parallel = 16\nqueue_depth = 8\n") ==
          "/etc/prewarmd/prewarmd.toml: [prefill] max_parallel, queue_depth, chunk: 16 jobs x 8 "
          "chunks x 4.00 MiB = 512.0 MiB of buffers, over the 256.0 MiB budget");
    CHECK_FALSE(parse_config("[prefill]\nqueue_depth = 8\nchunk = \"64MiB\"\n", "f").ok());
    CHECK(example_config().find("max_parallel x queue_depth x chunk is\n# 256MiB at most") !=
          std::string::npos);
    // The unit's MemoryMax: the budget, the daemon idle (24 MiB) and 2 MiB for each of
    // 64 running jobs, with room to spare (docs/daemon.md, "Memory").
    std::ifstream in(std::string(PREWARMD_SOURCE_DIR) + "/systemd/prewarmd.service");
    std::string line, memory_max;
    while (std::getline(in, line))
        if (line.rfind("MemoryMax=", 0) == 0)
            memory_max = line.substr(10);
    REQUIRE(memory_max == "512M");
    CHECK((512ULL << 20) > buffer_budget_bytes + (24ULL << 20) + 64 * (2ULL << 20));
}

TEST_CASE("a missing file: an error when named, the defaults at the default path") {
    TempDir dir;
    CHECK_FALSE(load_config(dir.file("nope.toml"), false).ok());
    CHECK(load_config(dir.file("nope.toml"), true).ok());
}

TEST_CASE("the example config lists every key at its default") {
    const auto c = parse_config(uncommented_example(), "config.example.toml");
    REQUIRE_MESSAGE(c.ok(), (c.ok() ? "" : c.error().message));
    const Config defaults;
    auto plan = plan_reload(defaults, *c);
    // Giving chunk in the file is not the same as leaving it out: only that differs.
    CHECK(plan.applied == std::vector<std::string>{"[prefill] chunk"});
    CHECK(plan.need_restart.empty());
    CHECK(c->chunk_bytes == defaults.chunk_bytes);
    CHECK(c->rates.empty());
}

TEST_CASE("the committed config.example.toml is the one the option table writes") {
    std::ifstream in(std::string(PREWARMD_SOURCE_DIR) + "/config.example.toml");
    std::ostringstream text;
    text << in.rdbuf();
    CHECK(text.str() == example_config());
}

TEST_CASE("a reload applies what it can and names what needs a restart") {
    const auto before = parse_config("", "x");
    const auto after = parse_config(
        "[daemon]\nstate_dir = \"/elsewhere\"\n[prefill]\ntotal_rate = \"50MiB/s\"\n", "x");
    const auto plan = plan_reload(*before, *after);
    CHECK(plan.applied == std::vector<std::string>{"[prefill] total_rate"});
    CHECK(plan.need_restart == std::vector<std::string>{"[daemon] state_dir"});
}

TEST_CASE("the state directory: one daemon at a time") {
    TempDir dir;
    auto first = StateDir::open(dir.file("state"));
    REQUIRE(first.ok());
    const auto second = StateDir::open(dir.file("state"));
    REQUIRE_FALSE(second.ok());
    CHECK(second.error().err == -EBUSY);
    CHECK(second.error().message.find("another prewarmd (pid " + std::to_string(::getpid())) !=
          std::string::npos);
}

TEST_CASE("job records round-trip; a damaged one is set aside, not trusted") {
    TempDir dir;
    auto state = StateDir::open(dir.file("state"));
    REQUIRE(state.ok());
    JobRecord r;
    r.identity = "xen-51728-8589934592";
    r.state = "running";
    r.reason = "";
    r.name = "xvdb";
    r.size_bytes = 8ULL << 30;
    r.done_bytes = 1ULL << 30;
    r.requested = true;
    r.rate_bytes_per_s = 50ULL << 20;
    REQUIRE(state->save(r).ok());
    JobRecord other = r;
    other.identity = "xen-51744-107374182400";
    other.state = "done";
    REQUIRE(state->save(other).ok());
    // Damage the second: flip a byte of its body.
    const auto path = dir.file("state/jobs/" + other.identity + ".json");
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(50);
    f.put('#');
    f.close();

    const auto loaded = state->load();
    REQUIRE(loaded.records.size() == 1);
    CHECK(loaded.records[0].identity == r.identity);
    CHECK(loaded.records[0].state == "running");
    CHECK(loaded.records[0].done_bytes == 1ULL << 30);
    CHECK(loaded.records[0].requested);
    CHECK(loaded.records[0].rate_bytes_per_s == 50ULL << 20);
    REQUIRE(loaded.set_aside.size() == 1);
    CHECK(loaded.set_aside[0].find("checksum mismatch") != std::string::npos);
    CHECK(std::filesystem::exists(dir.file("state/damaged/" + other.identity + ".json")));
    CHECK(state->load().set_aside.empty()); // moved: reported once
}

TEST_CASE("a rate of 0 means unlimited wherever a rate is given") {
    const auto c =
        parse_config("[prefill]\ntotal_rate = \"0B/s\"\n[rates]\n\"name:xvdb\" = \"0B/s\"\n"
                     "\"name:xvdc\" = \"unlimited\"\n",
                     "x.toml");
    REQUIRE_MESSAGE(c.ok(), (c.ok() ? "" : c.error().message));
    CHECK(c->total_rate_bytes_per_s == 0);
    REQUIRE(c->rates.size() == 2);
    CHECK(c->rates[0].rate_bytes_per_s == 0);
    CHECK(c->rates[1].rate_bytes_per_s == 0);

    for (const auto fields : {start_fields(), setting_fields()}) {
        const auto* rate = field_by_cli(fields, "rate");
        REQUIRE(rate);
        CHECK(check_value(*rate, uint64_t{0}).ok());
        for (const auto* text : {"unlimited", "0B/s"}) {
            const auto parsed = parse_field_text(*rate, text);
            REQUIRE(parsed.ok());
            CHECK(std::get<uint64_t>(*parsed) == 0);
        }
    }
    const auto word = parse_rate_or_unlimited(" unlimited ");
    REQUIRE(word.ok());
    CHECK(*word == 0);
    CHECK_FALSE(parse_rate_or_unlimited("fast").ok());
}

TEST_CASE("a job record tells a disk's own unlimited rate from none") {
    TempDir dir;
    auto state = StateDir::open(dir.file("state"));
    REQUIRE(state.ok());
    JobRecord own, none;
    own.identity = "xen-51728-8589934592";
    own.state = none.state = "queued";
    own.rate_bytes_per_s = 0; // asked for: unlimited, outside the shared budget
    none.identity = "xen-51744-8589934592";
    REQUIRE(state->save(own).ok());
    REQUIRE(state->save(none).ok());
    const auto loaded = state->load();
    REQUIRE(loaded.records.size() == 2);
    for (const auto& r : loaded.records)
        if (r.identity == own.identity)
            CHECK(r.rate_bytes_per_s == std::optional<uint64_t>(0));
        else
            CHECK_FALSE(r.rate_bytes_per_s.has_value());
}
