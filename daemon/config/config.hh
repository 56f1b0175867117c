// The daemon's settings: one table of options (section, key, type, default, range,
// help, reloadable) drives parsing, validation, reloads and config.example.toml.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.hh"
#include "discovery/match.hh"
#include "control/choices.hh"
#include "io/io_engine.hh"

namespace prewarmd {

struct RateOverride {
    MatchRule rule;
    uint64_t rate_bytes_per_s = 0;
};

struct Config {
    // [daemon]
    std::string state_dir = "/var/lib/prewarmd";
    std::string log_level = "info";
    // [discovery]
    std::vector<std::string> match = {"xen"};
    std::vector<std::string> exclude;
    std::chrono::milliseconds attach_grace{30000};
    bool wait_for_boot = true;
    // [prefill]
    AutoPrefill auto_prefill = AutoPrefill::blank;
    Mode mode = Mode::zero;
    Strategy strategy = Strategy::automatic;
    uint64_t chunk_bytes = 4 * 1024 * 1024;
    bool chunk_set = false; // given in the file: then a misfit is an error, not grown
    uint64_t backend_block_bytes = 2 * 1024 * 1024;
    bool backend_block_auto = false; // "auto": as the probe finds it
    unsigned queue_depth = 8;
    unsigned max_parallel = 1;
    unsigned filesystem_reserve_percent = 5;                // of a filesystem's size, never claimed
    uint64_t total_rate_bytes_per_s = 200ULL * 1024 * 1024; // 0: unlimited
    std::chrono::milliseconds checkpoint_interval{5000};
    IoEngineKind io_engine = IoEngineKind::automatic;
    bool idle_priority = true;
    bool probe = true;                       // cold probe before a job, warm after
    bool adaptive = true;                    // back off while the VM's other disks suffer
    std::vector<std::string> adaptive_watch; // whose latency counts; empty: every other disk
    // [api]
    std::vector<std::string> api_listen = {"127.0.0.1:7433"};
    std::string api_socket = "/run/prewarmd/api.sock";
    unsigned api_socket_mode = 0660;
    std::string api_socket_group = "prewarmd";
    std::string api_token_file; // "": STATE_DIR/api.token
    std::string api_tls_cert;
    std::string api_tls_key;
    unsigned api_max_connections = 16;
    unsigned api_rate_limit = 50; // requests per second and client
    // [dbus]
    bool dbus_enabled = true;
    std::string dbus_address; // "": the system bus
    std::string dbus_group = "prewarmd";
    // [events]: the webhooks (docs/events.md)
    std::vector<std::string> events_webhooks; // http(s) URLs
    std::string events_secret_file;           // the signing secret: needed with webhooks
    std::string events_ca_file;               // "": the system's CA store
    unsigned events_outbox_max = 1000;        // events waiting, per receiver and all
    // [rates]: "RULE" = "RATE", a disk's own rate, outside the shared budget
    std::vector<RateOverride> rates;

    // The rules above, parsed.
    std::vector<MatchRule> match_rules;
    std::vector<MatchRule> exclude_rules;
    std::vector<MatchRule> adaptive_watch_rules;
};

// The buffers of the daemon's jobs together: max_parallel jobs of queue_depth
// chunks each at most (docs/daemon.md, "Memory"). The unit's MemoryMax=512M leaves
// room above it for the rest: the daemon idle, about 2 MiB per running job.
inline constexpr uint64_t buffer_budget_bytes = 256ULL << 20;
// "" when `max_parallel` jobs of `queue_depth` chunks fit the budget, else why not:
// "16 jobs x 8 chunks x 4.00 MiB = 512 MiB of buffers, over the 256 MiB budget".
std::string over_buffer_budget(unsigned max_parallel, unsigned queue_depth, uint64_t chunk_bytes);

// Reads a config file. Errors name the file, the line and the key:
// "/etc/prewarmd/prewarmd.toml:12: [prefill] max_parallel: expected ...".
// A missing file is an error unless `missing_ok` (the default path): then defaults.
Result<Config> load_config(const std::string& path, bool missing_ok);
Result<Config> parse_config(std::string_view text, const std::string& source_name);

// config.example.toml: every key, commented out at its default, with its help.
std::string example_config();

// The same table as roff, for prewarmd.toml(5): a .SS per section, a .TP per key.
std::string config_reference_roff();
// prewarmctl(1)'s `set` commands, as roff: a .TP per setting of the schema.
std::string setting_commands_roff();

// What a reload from `before` to `after` applies at once, and what waits for a
// restart (and is kept as it was meanwhile).
struct ReloadPlan {
    std::vector<std::string> applied;
    std::vector<std::string> need_restart;
};
ReloadPlan plan_reload(const Config& before, const Config& after);

} // namespace prewarmd
