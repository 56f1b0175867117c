#include "config/config.hh"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <fstream>
#include <sstream>

#include <toml++/toml.h>

#include "base/units.hh"
#include "control/schema.hh"
#include "events/webhooks.hh"

namespace prewarmd {
namespace {

// One setting: where it lives, its default as TOML, what it means, and how a TOML
// value becomes part of a Config (an error message, or "" when it fits). A
// setting the API, D-Bus or prewarmctl also take has its Field (control/schema.hh):
// its kind, range and choices are the Field's, and `set` puts the checked value in
// place.
struct Option {
    std::string_view section;
    std::string_view key;
    std::string_view default_toml;
    std::string_view help;
    bool reloadable;
    std::string (*apply)(const toml::node&, Config&);
    bool (*same)(const Config&, const Config&);
    const Field* field = nullptr;
    void (*set)(Config&, const FieldValue&) = nullptr;
};

// The Field of the file's [section] key.
const Field* field_for(std::string_view section, std::string_view key) {
    for (const auto fields : {start_fields(), setting_fields()})
        for (const auto& f : fields)
            if (f.section == section && f.file_key == key)
                return &f;
    return nullptr;
}

std::optional<std::string> string_of(const toml::node& node) {
    if (const auto* s = node.as_string())
        return s->get();
    return std::nullopt;
}

template <typename T>
std::string from_text(const toml::node& node, T (*parse)(std::string_view, std::string&), T& out,
                      std::string_view example) {
    const auto text = string_of(node);
    if (!text)
        return "expected a string, such as \"" + std::string(example) + "\"";
    std::string error;
    const T value = parse(*text, error);
    if (!error.empty())
        return error;
    out = value;
    return {};
}

std::chrono::milliseconds duration_value(std::string_view text, std::string& error) {
    const auto d = parse_duration(text);
    if (!d) {
        error = d.error().message;
        return {};
    }
    return std::chrono::duration_cast<std::chrono::milliseconds>(*d);
}

uint64_t size_value(std::string_view text, std::string& error) {
    const auto s = parse_size(text);
    if (!s)
        error = s.error().message;
    return s ? *s : 0;
}

uint64_t rate_value(std::string_view text, std::string& error) {
    const auto r = parse_rate_or_unlimited(text);
    if (!r)
        error = r.error().message + " (or \"unlimited\")";
    return r ? *r : 0;
}

std::string path_or_empty(const toml::node& node, std::string& out) {
    const auto s = string_of(node);
    if (!s || (!s->empty() && (*s)[0] != '/'))
        return "expected an absolute path, or \"\" for none";
    out = *s;
    return {};
}

// "127.0.0.1:7433", "[::1]:7433", "0.0.0.0:7433"
std::string listen_list(const toml::node& node, std::vector<std::string>& out) {
    const auto* array = node.as_array();
    if (!array)
        return "expected a list of addresses, such as [\"127.0.0.1:7433\"]";
    std::vector<std::string> addresses;
    for (const auto& item : *array) {
        const auto text = string_of(item);
        const auto colon = text ? text->rfind(':') : std::string::npos;
        if (!text || colon == std::string::npos || colon == 0)
            return "every address is \"HOST:PORT\", such as \"127.0.0.1:7433\"";
        const auto port = parse_count(text->substr(colon + 1), 1, 65535);
        if (!port)
            return "the port of \"" + *text + "\": " + port.error().message;
        addresses.push_back(*text);
    }
    out = std::move(addresses);
    return {};
}

// Any string; `expected` says what, when the value is not one.
std::string text(const toml::node& node, std::string& out, const char* expected) {
    const auto s = string_of(node);
    if (!s)
        return std::string("expected ") + expected;
    out = *s;
    return {};
}

std::string count(const toml::node& node, unsigned& out, int64_t min, int64_t max) {
    const auto* n = node.as_integer();
    if (!n)
        return "expected a whole number from " + std::to_string(min) + " to " + std::to_string(max);
    if (n->get() < min || n->get() > max)
        return "expected a whole number from " + std::to_string(min) + " to " +
               std::to_string(max) + ", not " + std::to_string(n->get());
    out = static_cast<unsigned>(n->get());
    return {};
}

std::string boolean(const toml::node& node, bool& out) {
    const auto* b = node.as_boolean();
    if (!b)
        return "expected true or false";
    out = b->get();
    return {};
}

// A list of strings, `what` each ("rule", "URL"), each checked by `check`.
template <typename Check>
std::string string_list(const toml::node& node, std::vector<std::string>& out,
                        const std::string& what, std::string_view example, Check check) {
    const auto* array = node.as_array();
    if (!array)
        return "expected a list of " + what + "s, such as " + std::string(example);
    std::vector<std::string> items;
    for (const auto& item : *array) {
        const auto text = string_of(item);
        if (!text)
            return "every " + what + " is a string";
        if (const auto checked = check(*text); !checked)
            return checked.error().message;
        items.push_back(*text);
    }
    out = std::move(items);
    return {};
}

std::string rule_list(const toml::node& node, std::vector<std::string>& out) {
    return string_list(node, out, "rule", "[\"xen\", \"name:xvd[b-z]\"]",
                       [](const std::string& text) { return parse_match_rule(text); });
}

std::string url_list(const toml::node& node, std::vector<std::string>& out) {
    return string_list(node, out, "URL", "[\"https://cp.example/hooks/prewarmd\"]",
                       [](const std::string& text) { return split_webhook_url(text); });
}

std::string expected_one_of(std::span<const std::string_view> words) {
    std::string names;
    for (const auto& w : words)
        names += (names.empty() ? "\"" : ", \"") + std::string(w) + "\"";
    return "expected one of " + names;
}

// One of the names of E (base/names.hh).
template <HasNames E>
std::string choice(const toml::node& node, E& out) {
    const auto text = string_of(node);
    if (const auto value = text ? parse_name<E>(*text) : std::nullopt) {
        out = *value;
        return {};
    }
    std::vector<std::string_view> words;
    for (const auto& n : names_of(E{}))
        words.push_back(n.name);
    return expected_one_of(words);
}

// A TOML value as its Field takes it: a whole number, a rate ("50MiB/s",
// "unlimited") or one of its words.
Result<FieldValue> field_value(const Field& f, const toml::node& node) {
    std::string error;
    FieldValue value;
    switch (f.kind) {
    case Field::Kind::count: {
        unsigned n = 0;
        error = count(node, n, static_cast<int64_t>(f.min), static_cast<int64_t>(f.max));
        value = uint64_t{n};
        break;
    }
    case Field::Kind::rate: {
        uint64_t rate = 0;
        error = from_text(node, rate_value, rate, f.example);
        if (error.empty() && rate > f.max)
            error = "at most " + format_rate(static_cast<double>(f.max));
        value = rate;
        break;
    }
    case Field::Kind::duration:
    case Field::Kind::instant: {
        const auto text = string_of(node);
        auto parsed = text ? parse_field_text(f, *text) : Result<FieldValue>(Error{-EINVAL, ""});
        if (parsed)
            value = *parsed;
        else
            error = std::string(f.kind == Field::Kind::duration ? "expected a duration"
                                                                : "expected an RFC 3339 time") +
                    " such as \"" + std::string(f.example) + "\"";
        break;
    }
    case Field::Kind::choice: {
        const auto text = string_of(node);
        if (text && std::find(f.choices.begin(), f.choices.end(), *text) != f.choices.end())
            value = *text;
        else
            error = expected_one_of(f.choices);
        break;
    }
    }
    if (!error.empty())
        return Error{-EINVAL, error};
    return value;
}

uint64_t number(const FieldValue& v) {
    return std::get<uint64_t>(v);
}

unsigned count_of(const FieldValue& v) {
    return static_cast<unsigned>(std::get<uint64_t>(v));
}

template <HasNames E>
E choice_of(const FieldValue& v) {
    return *parse_name<E>(std::get<std::string>(v));
}

const std::vector<Option>& options() {
    static const std::vector<Option> table = {
        {"daemon", "state_dir", "\"/var/lib/prewarmd\"",
         "Where job records and checkpoints are kept (--state-dir overrides it).", false,
         [](const toml::node& n, Config& c) -> std::string {
             const auto s = string_of(n);
             if (!s || s->empty() || (*s)[0] != '/')
                 return "expected an absolute path";
             c.state_dir = *s;
             return {};
         },
         [](const Config& a, const Config& b) { return a.state_dir == b.state_dir; }},
        {"daemon", "log_level", "\"info\"", "How much to log: \"debug\", \"info\" or \"warning\".",
         true,
         [](const toml::node& n, Config& c) -> std::string {
             const auto level = string_of(n);
             if (!level || (*level != "debug" && *level != "info" && *level != "warning"))
                 return "expected one of \"debug\", \"info\", \"warning\"";
             c.log_level = *level;
             return {};
         },
         [](const Config& a, const Config& b) { return a.log_level == b.log_level; }},
        {"discovery", "match", "[\"xen\"]",
         "Which disks are considered: xen, name:GLOB, id:GLOB, id_path:GLOB, serial:GLOB,\n"
         "wwn:GLOB, size:MIN-MAX. Loop, RAM, dm and md devices need a rule naming them "
         "(docs/safety.md).",
         true, [](const toml::node& n, Config& c) { return rule_list(n, c.match); },
         [](const Config& a, const Config& b) { return a.match == b.match; }},
        {"discovery", "exclude", "[]", "Disks never considered, by the same rules.", true,
         [](const toml::node& n, Config& c) { return rule_list(n, c.exclude); },
         [](const Config& a, const Config& b) { return a.exclude == b.exclude; }},
        {"discovery", "attach_grace", "\"30s\"",
         "How long a new disk is watched for other users before it is warmed by itself.", true,
         [](const toml::node& n, Config& c) {
             return from_text(n, duration_value, c.attach_grace, "30s");
         },
         [](const Config& a, const Config& b) { return a.attach_grace == b.attach_grace; }},
        {"discovery", "wait_for_boot", "true",
         "Warm nothing by itself before the boot has finished (systemd's startup).", true,
         [](const toml::node& n, Config& c) { return boolean(n, c.wait_for_boot); },
         [](const Config& a, const Config& b) { return a.wait_for_boot == b.wait_for_boot; }},
        {"prefill", "auto_prefill", "\"blank\"",
         "\"blank\": warm considered disks that are blank and quiet by themselves;\n"
         "\"never\": only when asked.",
         true, nullptr,
         [](const Config& a, const Config& b) { return a.auto_prefill == b.auto_prefill; },
         field_for("prefill", "auto_prefill"),
         [](Config& c, const FieldValue& v) { c.auto_prefill = choice_of<AutoPrefill>(v); }},
        {"prefill", "mode", "\"zero\"",
         "\"zero\": write zeros over blocks that read all-zero; \"rewrite\": write back what\n"
         "was read (clones over a parent image); \"read\": only read.",
         true, nullptr, [](const Config& a, const Config& b) { return a.mode == b.mode; },
         field_for("prefill", "mode"),
         [](Config& c, const FieldValue& v) { c.mode = choice_of<Mode>(v); }},
        {"prefill", "strategy", "\"auto\"",
         "\"auto\": one 4 KiB write per backend block where the probe proves a first write\n"
         "warms the whole block (proven again after the job, else full writes); \"full\":\n"
         "every byte; \"sparse\": one write per block, failing if the proof does not hold.",
         true,
         [](const toml::node& n, Config& c) { return choice(n, c.strategy); },
         [](const Config& a, const Config& b) { return a.strategy == b.strategy; }},
        {"prefill", "chunk", "\"4MiB\"",
         "The size of each read and write; a multiple of backend_block and of the disk's\n"
         "optimal I/O size (the default grows to fit).",
         true,
         [](const toml::node& n, Config& c) {
             c.chunk_set = true;
             auto e = from_text(n, size_value, c.chunk_bytes, "4MiB");
             if (e.empty() && (c.chunk_bytes < 4096 || c.chunk_bytes > 64ULL << 20))
                 e = "expected a size from 4KiB to 64MiB";
             return e;
         },
         [](const Config& a, const Config& b) {
             return a.chunk_bytes == b.chunk_bytes && a.chunk_set == b.chunk_set;
         }},
        {"prefill", "backend_block", "\"2MiB\"",
         "The allocation block of the thin backend (2 MiB for XCP's VHD, 4 MiB for some);\n"
         "\"auto\": as the probe finds it (with probe = true; 2 MiB when it cannot tell).",
         true,
         [](const toml::node& n, Config& c) {
             c.backend_block_auto = n.as_string() && n.as_string()->get() == "auto";
             if (c.backend_block_auto) {
                 c.backend_block_bytes = 2ULL << 20; // for the chunk size; the probe decides
                 return std::string();
             }
             auto e = from_text(n, size_value, c.backend_block_bytes, "2MiB");
             if (e.empty() && (c.backend_block_bytes < 4096 || c.backend_block_bytes > 64ULL << 20))
                 e = "expected a size from 4KiB to 64MiB, or \"auto\"";
             return e;
         },
         [](const Config& a, const Config& b) {
             return a.backend_block_bytes == b.backend_block_bytes &&
                    a.backend_block_auto == b.backend_block_auto;
         }},
        {"prefill", "queue_depth", "8",
         "Chunks in flight per disk, 1 to 64; max_parallel x queue_depth x chunk is 256MiB\n"
         "at most.",
         true, nullptr,
         [](const Config& a, const Config& b) { return a.queue_depth == b.queue_depth; },
         field_for("prefill", "queue_depth"),
         [](Config& c, const FieldValue& v) { c.queue_depth = count_of(v); }},
        {"prefill", "max_parallel", "1",
         "Disks warmed at the same time, 1 to 64; max_parallel x queue_depth x chunk is\n"
         "256MiB at most.",
         true, nullptr,
         [](const Config& a, const Config& b) { return a.max_parallel == b.max_parallel; },
         field_for("prefill", "max_parallel"),
         [](Config& c, const FieldValue& v) { c.max_parallel = count_of(v); }},
        {"prefill", "filesystem_reserve", "5",
         "A mounted filesystem's free space is warmed online down to this share of its\n"
         "size, in per cent (0 to 90), which stays available to its users.",
         true,
         [](const toml::node& n, Config& c) {
             return count(n, c.filesystem_reserve_percent, 0, 90);
         },
         [](const Config& a, const Config& b) {
             return a.filesystem_reserve_percent == b.filesystem_reserve_percent;
         }},
        {"prefill", "total_rate", "\"200MiB/s\"",
         "The rate all running jobs share, such as \"200MiB/s\"; \"unlimited\" or \"0B/s\": no "
         "limit.",
         true, nullptr,
         [](const Config& a, const Config& b) {
             return a.total_rate_bytes_per_s == b.total_rate_bytes_per_s;
         },
         field_for("prefill", "total_rate"),
         [](Config& c, const FieldValue& v) { c.total_rate_bytes_per_s = number(v); }},
        {"prefill", "checkpoint_interval", "\"5s\"",
         "How often a job flushes the disk and records what it has done.", true,
         [](const toml::node& n, Config& c) {
             auto e = from_text(n, duration_value, c.checkpoint_interval, "5s");
             if (e.empty() && c.checkpoint_interval < std::chrono::milliseconds(100))
                 e = "at least 100ms";
             return e;
         },
         [](const Config& a, const Config& b) {
             return a.checkpoint_interval == b.checkpoint_interval;
         }},
        {"prefill", "io_engine", "\"auto\"",
         "\"auto\": io_uring, else pread/pwrite; \"uring\"; \"sync\" (pread/pwrite).", true,
         [](const toml::node& n, Config& c) { return choice(n, c.io_engine); },
         [](const Config& a, const Config& b) { return a.io_engine == b.io_engine; }},
        {"prefill", "idle_priority", "true",
         "Give the prefill's I/O the priority class idle, below the VM's own.", true,
         [](const toml::node& n, Config& c) { return boolean(n, c.idle_priority); },
         [](const Config& a, const Config& b) { return a.idle_priority == b.idle_priority; }},
        {"prefill", "probe", "true",
         "Probe first-write latency before a job (and granularity), and again once done\n"
         "(prewarmd probe; a few hundred small writes that put back what they read).",
         true, [](const toml::node& n, Config& c) { return boolean(n, c.probe); },
         [](const Config& a, const Config& b) { return a.probe == b.probe; }},
        {"prefill", "adaptive", "true",
         "Back off while the VM's other disks are slower than alone (docs/adaptive.md).", true,
         [](const toml::node& n, Config& c) { return boolean(n, c.adaptive); },
         [](const Config& a, const Config& b) { return a.adaptive == b.adaptive; }},
        {"prefill", "adaptive_watch", "[]",
         "The disks whose latency adaptive mode protects, by match rules; [] for every disk\n"
         "but those being warmed.",
         true, [](const toml::node& n, Config& c) { return rule_list(n, c.adaptive_watch); },
         [](const Config& a, const Config& b) { return a.adaptive_watch == b.adaptive_watch; }},
        {"api", "listen", "[\"127.0.0.1:7433\"]",
         "TCP addresses of the HTTP API. On loopback anyone may read; a change needs the\n"
         "token. Elsewhere everything needs the token (and tls_cert and tls_key, or a\n"
         "TLS-terminating proxy in front). docs/security.md.",
         false, [](const toml::node& n, Config& c) { return listen_list(n, c.api_listen); },
         [](const Config& a, const Config& b) { return a.api_listen == b.api_listen; }},
        {"api", "socket", "\"/run/prewarmd/api.sock\"",
         "The API's unix socket, prewarmctl's default way in; \"\" for none.", false,
         [](const toml::node& n, Config& c) { return path_or_empty(n, c.api_socket); },
         [](const Config& a, const Config& b) { return a.api_socket == b.api_socket; }},
        {"api", "socket_mode", "\"0660\"", "Its permissions, in octal.", false,
         [](const toml::node& n, Config& c) -> std::string {
             const auto s = string_of(n);
             if (!s || s->size() != 4 || s->find_first_not_of("01234567") != std::string::npos)
                 return "expected four octal digits, such as \"0660\"";
             c.api_socket_mode = static_cast<unsigned>(std::stoul(*s, nullptr, 8));
             return {};
         },
         [](const Config& a, const Config& b) { return a.api_socket_mode == b.api_socket_mode; }},
        {"api", "socket_group", "\"prewarmd\"",
         "The socket's group: besides root, its members may change things over the socket\n"
         "(others who may connect only read); \"\" or a missing group: root only.",
         false,
         [](const toml::node& n, Config& c) { return text(n, c.api_socket_group, "a group name"); },
         [](const Config& a, const Config& b) { return a.api_socket_group == b.api_socket_group; }},
        {"api", "token_file", "\"\"",
         "The bearer token that changes over TCP need, and every request not from this\n"
         "machine: a file of mode 0600 holding 16 or more of letters, digits and ._~- .\n"
         "\"\": STATE_DIR/api.token, made at the first start. Read again on a reload.",
         true, [](const toml::node& n, Config& c) { return path_or_empty(n, c.api_token_file); },
         [](const Config& a, const Config& b) { return a.api_token_file == b.api_token_file; }},
        {"api", "tls_cert", "\"\"", "A PEM certificate (chain): the TCP listeners speak TLS 1.2+.",
         false, [](const toml::node& n, Config& c) { return path_or_empty(n, c.api_tls_cert); },
         [](const Config& a, const Config& b) { return a.api_tls_cert == b.api_tls_cert; }},
        {"api", "tls_key", "\"\"", "Its PEM private key.", false,
         [](const toml::node& n, Config& c) { return path_or_empty(n, c.api_tls_key); },
         [](const Config& a, const Config& b) { return a.api_tls_key == b.api_tls_key; }},
        {"api", "max_connections", "16", "Connections served at once, per listener.", false,
         [](const toml::node& n, Config& c) { return count(n, c.api_max_connections, 2, 256); },
         [](const Config& a, const Config& b) {
             return a.api_max_connections == b.api_max_connections;
         }},
        {"api", "rate_limit", "50", "Requests per second from one client; beyond: 429.", false,
         [](const toml::node& n, Config& c) { return count(n, c.api_rate_limit, 1, 100000); },
         [](const Config& a, const Config& b) { return a.api_rate_limit == b.api_rate_limit; }},
        {"dbus", "enabled", "true",
         "Serve org.prewarmd.Prewarmd1 on D-Bus, and watch systemd (the boot) and logind\n"
         "(shutdown, sleep) there. Without a bus: a warning, the rest works.",
         false, [](const toml::node& n, Config& c) { return boolean(n, c.dbus_enabled); },
         [](const Config& a, const Config& b) { return a.dbus_enabled == b.dbus_enabled; }},
        {"dbus", "address", "\"\"",
         "The bus: \"\" for the system bus, or an address such as \"unix:path=/run/x\".", false,
         [](const toml::node& n, Config& c) {
             return text(n, c.dbus_address, "a D-Bus address, or \"\" for the system bus");
         },
         [](const Config& a, const Config& b) { return a.dbus_address == b.dbus_address; }},
        {"dbus", "group", "\"prewarmd\"",
         "Besides root, the group whose members may change things over D-Bus (start, pause,\n"
         "settings); the bus policy (org.prewarmd.Prewarmd1.conf) must name the same group.",
         true,
         [](const toml::node& n, Config& c) {
             return text(n, c.dbus_group, "a group name, or \"\" for root only");
         },
         [](const Config& a, const Config& b) { return a.dbus_group == b.dbus_group; }},
        {"events", "webhook", "[]",
         "URLs each job's start and end (and each warm disk given back) is POSTed to, as a\n"
         "signed CloudEvent (docs/events.md). Beyond this machine, https://: http:// sends\n"
         "the disks' details in the clear.",
         true, [](const toml::node& n, Config& c) { return url_list(n, c.events_webhooks); },
         [](const Config& a, const Config& b) { return a.events_webhooks == b.events_webhooks; }},
        {"events", "secret_file", "\"\"",
         "The key the events are signed with (Standard Webhooks): a file of mode 0600, the\n"
         "daemon's (root's), holding \"whsec_\" and base64, or 16 bytes or more; needed with\n"
         "webhook. Read again on a reload.",
         true, [](const toml::node& n, Config& c) { return path_or_empty(n, c.events_secret_file); },
         [](const Config& a, const Config& b) {
             return a.events_secret_file == b.events_secret_file;
         }},
        {"events", "ca_file", "\"\"",
         "PEM certificates an https:// receiver's must chain to; \"\": the system's store.", true,
         [](const toml::node& n, Config& c) { return path_or_empty(n, c.events_ca_file); },
         [](const Config& a, const Config& b) { return a.events_ca_file == b.events_ca_file; }},
        {"events", "outbox_max", "1000",
         "Events kept for receivers that have not taken them (STATE_DIR/outbox), 1 to\n"
         "10000; past it the oldest are dropped, and counted.",
         true,
         [](const toml::node& n, Config& c) { return count(n, c.events_outbox_max, 1, 10000); },
         [](const Config& a, const Config& b) {
             return a.events_outbox_max == b.events_outbox_max;
         }},
    };
    return table;
}

std::string where(const std::string& source, const toml::source_region& region) {
    return source + ":" + std::to_string(region.begin.line);
}

bool same_rates(const Config& a, const Config& b) {
    if (a.rates.size() != b.rates.size())
        return false;
    for (size_t i = 0; i < a.rates.size(); ++i)
        if (a.rates[i].rule.text != b.rates[i].rule.text ||
            a.rates[i].rate_bytes_per_s != b.rates[i].rate_bytes_per_s)
            return false;
    return true;
}

} // namespace

Result<Config> parse_config(std::string_view text, const std::string& source) {
    toml::table root;
    try {
        root = toml::parse(text, std::string_view(source));
    } catch (const toml::parse_error& e) {
        return Error{-EINVAL, where(source, e.source()) + ":" +
                                  std::to_string(e.source().begin.column) + ": " +
                                  std::string(e.description())};
    }
    Config config;
    for (const auto& [section_key, section_node] : root) {
        const std::string section(section_key.str());
        const auto* table = section_node.as_table();
        if (section == "rates" && table) {
            for (const auto& [rule_key, value] : *table) {
                auto rule = parse_match_rule(rule_key.str());
                if (!rule)
                    return Error{-EINVAL, where(source, rule_key.source()) + ": [rates] " +
                                              rule.error().message};
                const auto rate_text = string_of(value);
                std::string error =
                    rate_text ? std::string() : "expected a rate, such as \"50MiB/s\"";
                const uint64_t rate = rate_text ? rate_value(*rate_text, error) : 0;
                if (!error.empty())
                    return Error{-EINVAL, where(source, value.source()) + ": [rates] \"" +
                                              std::string(rule_key.str()) + "\": " + error};
                config.rates.push_back({*rule, rate});
            }
            continue;
        }
        bool known_section = false;
        for (const auto& o : options())
            known_section |= o.section == section;
        if (!table || !known_section)
            return Error{-EINVAL,
                         where(source, section_key.source()) + ": [" + section +
                             "]: unknown section (daemon, discovery, prefill, api, dbus, events, rates)"};
        for (const auto& [key_name, value] : *table) {
            const std::string key(key_name.str());
            const Option* option = nullptr;
            std::string known;
            for (const auto& o : options())
                if (o.section == section) {
                    known += (known.empty() ? "" : ", ") + std::string(o.key);
                    if (o.key == key)
                        option = &o;
                }
            if (!option)
                return Error{-EINVAL, where(source, key_name.source()) + ": [" + section + "] " +
                                          key + ": unknown key (" + known + ")"};
            std::string error;
            if (option->field) {
                if (auto checked = field_value(*option->field, value))
                    option->set(config, *checked);
                else
                    error = checked.error().message;
            } else {
                error = option->apply(value, config);
            }
            if (!error.empty())
                return Error{-EINVAL, where(source, value.source()) + ": [" + section + "] " + key +
                                          ": " + error};
        }
    }
    auto match = parse_match_rules(config.match);
    auto exclude = parse_match_rules(config.exclude);
    auto watch = parse_match_rules(config.adaptive_watch);
    for (const auto* rules : {&match, &exclude, &watch})
        if (!*rules)
            return Error{-EINVAL, source + ": " + rules->error().message};
    config.match_rules = std::move(*match);
    config.exclude_rules = std::move(*exclude);
    config.adaptive_watch_rules = std::move(*watch);
    if (!config.events_webhooks.empty() && config.events_secret_file.empty())
        return Error{-EINVAL, source + ": [events] webhook needs secret_file: the events are "
                                       "signed, for receivers to know them"};
    if (const auto over =
            over_buffer_budget(config.max_parallel, config.queue_depth, config.chunk_bytes);
        !over.empty())
        return Error{-EINVAL, source + ": [prefill] max_parallel, queue_depth, chunk: " + over};
    return config;
}

std::string over_buffer_budget(unsigned max_parallel, unsigned queue_depth, uint64_t chunk_bytes) {
    const uint64_t bytes = uint64_t{max_parallel} * queue_depth * chunk_bytes;
    if (bytes <= buffer_budget_bytes)
        return {};
    return std::to_string(max_parallel) + (max_parallel == 1 ? " job x " : " jobs x ") +
           std::to_string(queue_depth) + (queue_depth == 1 ? " chunk x " : " chunks x ") +
           format_size(chunk_bytes) + " = " + format_size(bytes) + " of buffers, over the " +
           format_size(buffer_budget_bytes) + " budget";
}

Result<Config> load_config(const std::string& path, bool missing_ok) {
    std::ifstream in(path);
    if (!in) {
        const int err = errno;
        if (err == ENOENT && missing_ok)
            return parse_config("", path);
        return Error{-err, path + ": " + std::strerror(err)};
    }
    std::ostringstream text;
    text << in.rdbuf();
    return parse_config(text.str(), path);
}

std::string example_config() {
    std::string out =
        "# prewarmd.toml: the settings of prewarmd(8), each shown at its default.\n"
        "# Uncomment a line to change it. Sizes and rates take units (4MiB, 200MiB/s),\n"
        "# durations too (30s, 500ms). An unknown key is an error, not ignored. After\n"
        "# a change, `systemctl reload prewarmd` (SIGHUP) applies what it can and says\n"
        "# what needs a restart.\n";
    std::string_view section;
    for (const auto& o : options()) {
        if (o.section != section) {
            section = o.section;
            out += "\n[" + std::string(section) + "]\n";
        }
        out += "\n";
        std::string_view help = o.help;
        for (size_t nl; (nl = help.find('\n')) != std::string_view::npos;
             help.remove_prefix(nl + 1))
            out += "# " + std::string(help.substr(0, nl)) + "\n";
        out += "# " + std::string(help) + (o.reloadable ? "\n" : " (needs a restart)\n");
        out += "#" + std::string(o.key) + " = " + std::string(o.default_toml) + "\n";
    }
    out += "\n[rates]\n\n"
           "# A disk's own rate, outside the shared total_rate: \"RULE\" = \"RATE\"\n"
           "# (\"unlimited\" or \"0B/s\": no limit).\n"
           "#\"name:xvdb\" = \"50MiB/s\"\n";
    return out;
}

namespace {

// Text as roff: a backslash as \e, a dot or quote that starts a line behind \&.
std::string roff(std::string_view text) {
    std::string out;
    bool line_start = true;
    for (const char c : text) {
        if (line_start && (c == '.' || c == '\''))
            out += "\\&";
        out += c == '\\' ? std::string("\\e") : std::string(1, c);
        line_start = c == '\n';
    }
    return out;
}

} // namespace

std::string config_reference_roff() {
    std::string out;
    std::string_view section;
    for (const auto& o : options()) {
        if (o.section != section) {
            section = o.section;
            out += ".SS [" + std::string(section) + "]\n";
        }
        out += ".TP\n\\fB" + std::string(o.key) + "\\fR = " + roff(o.default_toml) + "\n";
        std::string help(o.help);
        std::replace(help.begin(), help.end(), '\n', ' ');
        out += roff(help) + (o.reloadable ? "" : " Needs a restart.") + "\n";
    }
    return out;
}

std::string setting_commands_roff() {
    std::string out;
    for (const auto& f : setting_fields()) {
        const std::string value = f.kind == Field::Kind::rate       ? "RATE"
                                  : f.kind == Field::Kind::count    ? "N"
                                  : f.kind == Field::Kind::duration ? "DURATION"
                                                                    : joined_words(f.choices, "|");
        auto help = field_help(f);
        help[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(help[0])));
        std::string cli;
        for (const char c : f.cli)
            cli += c == '-' ? std::string("\\-") : std::string(1, c);
        out += ".TP\n.BI \"set " + cli + "\" \" " + roff(value) + "\"\n" + roff(help) +
               "; the file's [" + std::string(f.section) + "] " + std::string(f.file_key) + ".\n";
    }
    return out;
}

ReloadPlan plan_reload(const Config& before, const Config& after) {
    ReloadPlan plan;
    for (const auto& o : options()) {
        if (o.same(before, after))
            continue;
        const auto name = "[" + std::string(o.section) + "] " + std::string(o.key);
        (o.reloadable ? plan.applied : plan.need_restart).push_back(name);
    }
    if (!same_rates(before, after))
        plan.applied.push_back("[rates]");
    return plan;
}

} // namespace prewarmd
