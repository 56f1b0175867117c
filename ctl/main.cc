// prewarmctl: the operator's view of prewarmd, through its HTTP API.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/args.hh"
#include "base/units.hh"
#include "client.hh"
#include "control/refusal.hh"
#include "control/schema.hh"
#include "view.hh"

namespace prewarmd::ctl {
namespace {

using json = nlohmann::json;

std::string upper(std::string_view word) {
    std::string out(word);
    for (auto& c : out)
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
}

// The options; a start's come from its fields (control/schema.hh).
const std::vector<OptionSpec>& options() {
    static const std::vector<OptionSpec> table = [] {
        static std::deque<std::string> texts; // what the start options' help views
        std::vector<OptionSpec> t = {
            {"socket", 0, "PATH", "the daemon's unix socket (default /run/prewarmd/api.sock)"},
            {"url", 0, "URL", "its HTTP API instead, e.g. https://10.0.0.5:7433"},
            {"token-file", 0, "FILE", "a file holding the bearer token (or PREWARMD_TOKEN)"},
            {"cacert", 0, "FILE", "the CA certificate of an https URL"},
            {"json", 0, "", "print the API's JSON instead of text"},
            {"no-color", 0, "", "no colours (also when NO_COLOR is set or not on a terminal)"},
        };
        for (const auto& f : start_fields()) {
            const auto& value = texts.emplace_back(f.kind == Field::Kind::count      ? "N"
                                                   : f.kind == Field::Kind::rate     ? "RATE"
                                                   : f.kind == Field::Kind::duration ? "DURATION"
                                                   : f.kind == Field::Kind::instant  ? "TIME"
                                                                                    : upper(f.cli));
            t.push_back({f.cli, 0, value, texts.emplace_back("start: " + field_help(f))});
        }
        t.insert(t.end(), {
                              {"timeout", 0, "DURATION",
                               "wait: give up after this long, e.g. 30min (exit 7)"},
                              {"interval", 0, "DURATION", "watch: how often to redraw (default 1s)"},
                              {"help", 'h', "", "this help"},
                              {"version", 0, "", "the version"},
                          });
        return t;
    }();
    return table;
}

struct Context;

// One command: its words, what it does, what it takes, what bash completes after it,
// the options that are its own, and what runs it. usage(), the completion script,
// the check of options and the dispatch all read this table.
struct Verb {
    std::string name;
    std::string args; // as usage shows them
    std::string help;
    enum class Takes { nothing, one_disk, disks, words } takes;
    std::string completes;            // after the command: a bash word list, or "disks"
    std::vector<std::string> options; // options of this command only
    int (*run)(Context&, const std::vector<std::string>& words);
};
const std::vector<Verb>& verbs();

// "  show DISK   one disk in detail", the help wrapped into its column.
std::string usage() {
    constexpr size_t column = 30, width = 80;
    std::string commands;
    for (const auto& v : verbs()) {
        const auto head = "  " + v.name + (v.args.empty() ? "" : " " + v.args);
        std::string line = head.size() < column ? head + std::string(column - head.size(), ' ')
                                                : head + "\n" + std::string(column, ' ');
        size_t used = column;
        std::istringstream words(v.help);
        for (std::string word; words >> word;) {
            if (used > column && used + 1 + word.size() > width) {
                line += "\n" + std::string(column, ' ');
                used = column;
            } else if (used > column) {
                line += ' ';
                ++used;
            }
            line += word;
            used += word.size();
        }
        commands += line + "\n";
    }
    return "usage: prewarmctl [OPTIONS] COMMAND [ARGS]\n\nCommands:\n" + commands +
           "\n"
           "DISK is a disk id, a kernel name (xvdb) or a device (/dev/xvdb).\n"
           "\n"
           "Options:\n" +
           options_help(options()) +
           "\n"
           "Environment: PREWARMD_SOCKET, PREWARMD_URL, PREWARMD_TOKEN, NO_COLOR.\n"
           "\n"
           "Exit codes: 0 done (wait: every disk warm); 1 failed (a job, or the daemon);\n"
           "2 bad usage; 3 the daemon cannot be reached; 4 not authorized (token); 5 no such\n"
           "disk; 6 refused or not in that state; 7 timed out; wait: 8 a disk unproven\n"
           "(written, not proven warm), 9 a disk not_warmable (its backend discards zero\n"
           "writes). Interrupted, wait dies of the signal (130 on Ctrl-C).\n";
}

volatile sig_atomic_t interrupted = 0; // the signal that came, SIGINT or SIGTERM

int fail(int code, const std::string& message) {
    std::fprintf(stderr, "prewarmctl: %s\n", message.c_str());
    return code;
}

// The exit code and line for a reply that is not a success.
int refused(const Reply& reply) {
    const std::string detail =
        reply.body.is_object() && reply.body.contains("detail") && reply.body["detail"].is_string()
            ? reply.body["detail"].get<std::string>()
            : "HTTP " + std::to_string(reply.status);
    const std::string type =
        reply.body.is_object() && reply.body.contains("type") && reply.body["type"].is_string()
            ? reply.body["type"].get<std::string>()
            : "";
    const int code = ctl_exit_for(reply.status, type);
    if (code == ctl_exit::unauthorized)
        return fail(code, detail + " (give the token: --token-file FILE, or PREWARMD_TOKEN)");
    return fail(code, detail);
}

struct Context {
    Client& client;
    const ParsedArgs& args;
    std::string command;
    Style style;
    bool json_out = false;
};

void print_json(const json& value) {
    std::printf("%s\n", value.dump(2, ' ', false, json::error_handler_t::replace).c_str());
}

// GET that must succeed: the body, or the exit code in `code`.
std::optional<json> fetch(Context& c, const std::string& path, int& code) {
    auto reply = c.client.get(path);
    if (!reply) {
        code = fail(ctl_exit::unreachable, reply.error().message);
        return std::nullopt;
    }
    if (reply->status != 200) {
        code = refused(*reply);
        return std::nullopt;
    }
    return reply->body;
}

// A disk by id, kernel name or device node: its id, or the exit code in `code`.
std::optional<std::string> resolve(Context& c, const std::string& wanted, int& code) {
    const auto list = fetch(c, "/v1/disks", code);
    if (!list)
        return std::nullopt;
    std::vector<json> by_name;
    for (const auto& d : (*list)["disks"]) {
        if (d.value("id", "") == wanted)
            return wanted;
        if (d.value("name", "") == wanted || d.value("devnode", "") == wanted)
            by_name.push_back(d);
    }
    // A name is reused: the attached disk is the one meant.
    if (by_name.size() > 1) {
        std::vector<json> attached;
        for (const auto& d : by_name)
            if (d.value("attached", false))
                attached.push_back(d);
        if (attached.size() == 1)
            by_name = attached;
    }
    if (by_name.size() == 1)
        return by_name[0]["id"].get<std::string>();
    if (by_name.empty()) {
        code = fail(ctl_exit::unknown_disk, "no disk '" + wanted + "' (prewarmctl status lists them)");
        return std::nullopt;
    }
    std::string ids;
    for (const auto& d : by_name)
        ids += " " + d.value("id", "");
    code = fail(ctl_exit::usage, "'" + wanted + "' names several disks; give an id:" + ids);
    return std::nullopt;
}

int status(Context& c) {
    int code = ctl_exit::ok;
    const auto list = fetch(c, "/v1/disks", code);
    if (!list)
        return code;
    if (c.json_out)
        print_json(*list);
    else
        std::fputs(status_table((*list)["disks"], c.style).c_str(), stdout);
    return ctl_exit::ok;
}

int show(Context& c, const std::string& disk) {
    int code = ctl_exit::ok;
    const auto id = resolve(c, disk, code);
    if (!id)
        return code;
    const auto d = fetch(c, "/v1/disks/" + *id, code);
    if (!d)
        return code;
    if (c.json_out)
        print_json(*d);
    else
        std::fputs(disk_details(*d, c.style).c_str(), stdout);
    return ctl_exit::ok;
}

// Probes the disk now (the daemon does it): the warm places again when it was
// probed before its job (did the warming stick?), else a cold probe.
int probe(Context& c, const std::string& disk) {
    int code = ctl_exit::ok;
    const auto id = resolve(c, disk, code);
    if (!id)
        return code;
    auto reply = c.client.post("/v1/disks/" + *id + "/probe", json::object());
    if (!reply)
        return fail(ctl_exit::unreachable, reply.error().message);
    if (reply->status != 200)
        return refused(*reply);
    const auto& d = reply->body;
    const auto name = d.value("name", disk);
    const auto figures = d.value("probe", json());
    if (!figures.is_object())
        return fail(ctl_exit::failed, name + ": no probe figures in the answer");
    if (c.json_out) {
        print_json(figures);
    } else {
        const auto line = [](const char* what, const json& l) {
            std::printf("  %-10s p50 %.3f ms, p99 %.3f ms (%u places)\n", what,
                        l.value("p50_seconds", 0.0) * 1000, l.value("p99_seconds", 0.0) * 1000,
                        l.value("samples", 0u));
        };
        std::printf("%s:\n", name.c_str());
        line("cold", figures["cold"]);
        line("rewrite", figures["rewrite"]);
        if (figures["warm"].is_object()) {
            line("warm", figures["warm"]);
            std::printf("  %-10s %.1fx\n", "cold/warm", figures.value("penalty_ratio", 0.0));
        }
        const auto granularity = figures.value("granularity_bytes", uint64_t{0});
        std::printf("  %-10s %s (%s)\n", "blocks",
                    granularity ? format_size(granularity).c_str() : "unknown",
                    figures.value("granularity_note", std::string()).c_str());
    }
    if (figures.value("warming_stuck", json()) == false)
        return fail(ctl_exit::failed, name + ": warming did not stick");
    return ctl_exit::ok;
}

// start, pause, resume, cancel, release (control/schema.hh's actions); a start's
// options by its fields.
int act(Context& c, const std::string& action, const std::string& disk) {
    json body = json::object();
    for (const auto& field : start_fields()) {
        const auto text = c.args.value(field.cli);
        if (!text)
            continue;
        const auto value = parse_field_text(field, *text);
        if (!value)
            return fail(ctl_exit::usage,
                        "--" + std::string(field.cli) + " " + *text + ": " + value.error().message);
        if (field.kind == Field::Kind::instant) // as the API takes it: a time, in UTC
            body[std::string(field.key)] =
                rfc3339(static_cast<int64_t>(std::get<uint64_t>(*value)));
        else
            std::visit([&](const auto& v) { body[std::string(field.key)] = v; }, *value);
    }
    int code = ctl_exit::ok;
    const auto id = resolve(c, disk, code);
    if (!id)
        return code;
    auto reply = c.client.post("/v1/disks/" + *id + "/" + action, body);
    if (!reply)
        return fail(ctl_exit::unreachable, reply.error().message);
    if (reply->status != 200 && reply->status != 202)
        return refused(*reply);
    // A job stops after its writes in flight: show where it ended up.
    const auto stopping = [&action](const Result<Reply>& r) {
        const auto state = r->body.value("state", "");
        return (action == "cancel" || action == "release") && r->status == 200 &&
               (state == "running" || state == "paused");
    };
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (stopping(reply) && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        reply = c.client.get("/v1/disks/" + *id);
        if (!reply)
            return fail(ctl_exit::unreachable, reply.error().message);
    }
    if (c.json_out) {
        print_json(reply->body);
    } else {
        const auto name = reply->body.value("name", disk);
        std::printf("%s: %s\n", name.c_str(), reply->body.value("state", "?").c_str());
        // A job asked for keeps the disk to itself: say so, and how to let go.
        if (action == "start" && reply->body.value("exclusive", false))
            std::printf("%s is held exclusively until warm: mkfs, mount and the like wait; "
                        "`prewarmctl release %s` lets go at once\n",
                        name.c_str(), name.c_str());
    }
    return ctl_exit::ok;
}

int settings(Context& c, const std::optional<json>& patch) {
    int code = ctl_exit::ok;
    std::optional<json> s;
    if (patch) {
        auto reply = c.client.patch("/v1/settings", *patch);
        if (!reply)
            return fail(ctl_exit::unreachable, reply.error().message);
        if (reply->status != 200)
            return refused(*reply);
        s = reply->body;
    } else {
        s = fetch(c, "/v1/settings", code);
        if (!s)
            return code;
    }
    if (c.json_out) {
        print_json(*s);
        return ctl_exit::ok;
    }
    // One line per setting of the schema, named by its key in the file: "total rate:".
    for (const auto& f : setting_fields()) {
        std::string label(f.file_key);
        std::replace(label.begin(), label.end(), '_', ' ');
        const auto value = s->find(std::string(f.key));
        std::string text = "?";
        if (value != s->end() && f.kind == Field::Kind::choice && value->is_string())
            text = value->get<std::string>();
        else if (value != s->end() && value->is_number_unsigned())
            text = f.kind == Field::Kind::count ? std::to_string(value->get<uint64_t>())
                   : value->get<uint64_t>()     ? format_rate(value->get<double>())
                                                : "unlimited";
        std::printf("%-15s%s\n", (label + ":").c_str(), text.c_str());
    }
    return ctl_exit::ok;
}

// set SETTING VALUE: the settings by their fields (control/schema.hh).
int set(Context& c, const std::vector<std::string>& words) {
    std::string names;
    for (const auto& f : setting_fields())
        names += (names.empty() ? "" : ", ") + std::string(f.cli);
    if (words.size() != 2)
        return fail(ctl_exit::usage,
                    "set takes a setting and a value: set rate 100MiB/s (" + names + ")");
    const Field* field = field_by_cli(setting_fields(), words[0]);
    if (!field)
        return fail(ctl_exit::usage, "set: " + names + ", not " + words[0]);
    const auto value = parse_field_text(*field, words[1]);
    if (!value)
        return fail(ctl_exit::usage, "set " + words[0] + " " + words[1] + ": " + value.error().message);
    json patch;
    std::visit([&](const auto& v) { patch[std::string(field->key)] = v; }, *value);
    return settings(c, patch);
}

// A duration with a unit (30s, 5min), or a bare number of seconds, as timeout(1).
std::chrono::milliseconds duration_option(const ParsedArgs& args, const char* name,
                                          std::chrono::milliseconds fallback, bool& bad) {
    const auto text = args.value(name);
    if (!text)
        return fallback;
    const bool bare = !text->empty() && text->find_first_not_of("0123456789.") == std::string::npos;
    const auto d = parse_duration(bare ? *text + "s" : *text);
    if (!d || d->count() <= 0) {
        bad = true;
        fail(ctl_exit::usage, "--" + std::string(name) + " " + *text +
                             ": expected a duration such as 30s, 5min or 90 (seconds)");
        return fallback;
    }
    return std::chrono::duration_cast<std::chrono::milliseconds>(*d);
}

void on_interrupt(int signal) {
    interrupted = signal;
}

void catch_interrupts() {
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    ::sigaction(SIGINT, &action, nullptr);
    ::sigaction(SIGTERM, &action, nullptr);
}

// Sleeps up to `d`, less when interrupted.
void pause_for(std::chrono::milliseconds d) {
    const auto end = std::chrono::steady_clock::now() + d;
    while (!interrupted && std::chrono::steady_clock::now() < end)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

// On a terminal the table is redrawn in place (cursor up, each line cleared as it is
// overwritten, no screen clear: no flicker); elsewhere a table per interval.
int watch(Context& c) {
    bool bad = false;
    const auto interval = duration_option(c.args, "interval", std::chrono::seconds(1), bad);
    if (bad)
        return ctl_exit::usage;
    catch_interrupts();
    const bool tty = ::isatty(STDOUT_FILENO) && !c.json_out;
    int drawn = 0;
    if (tty)
        std::fputs("\033[?25l", stdout); // hide the cursor
    int code = ctl_exit::ok;
    while (!interrupted) {
        const auto list = fetch(c, "/v1/disks", code);
        if (!list)
            break;
        if (c.json_out) {
            std::printf("%s\n", list->dump(-1, ' ', false, json::error_handler_t::replace).c_str());
        } else {
            auto table = status_table((*list)["disks"], c.style);
            if (tty) {
                if (drawn)
                    std::printf("\033[%dA", drawn);
                std::string out;
                std::istringstream lines(table);
                for (std::string line; std::getline(lines, line);)
                    out += "\033[2K" + line + "\n";
                std::fputs((out + "\033[J").c_str(), stdout);
                drawn = static_cast<int>(std::count(table.begin(), table.end(), '\n'));
            } else {
                std::fputs((table + "\n").c_str(), stdout);
            }
        }
        std::fflush(stdout);
        pause_for(interval);
    }
    if (tty)
        std::fputs("\033[?25h", stdout);
    std::fflush(stdout);
    return code;
}

int wait_for(Context& c, const std::vector<std::string>& disks) {
    bool bad = false;
    const auto timeout = duration_option(c.args, "timeout", std::chrono::milliseconds::zero(), bad);
    if (bad)
        return ctl_exit::usage;
    catch_interrupts();
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::vector<std::string> ids;
    bool told_unreachable = false;
    for (;;) {
        if (ids.empty()) {
            // Resolved once the daemon answers: at boot it may not be up yet.
            int code = ctl_exit::ok;
            auto probe = c.client.get("/v1/disks");
            if (probe) {
                for (const auto& d : disks) {
                    const auto id = resolve(c, d, code);
                    if (!id)
                        return code;
                    ids.push_back(*id);
                }
            } else if (!told_unreachable) {
                std::fprintf(stderr, "prewarmctl: %s; waiting for it\n",
                             probe.error().message.c_str());
                told_unreachable = true;
            }
        }
        if (!ids.empty()) {
            json states = json::array();
            bool all_done = true;
            for (const auto& id : ids) {
                auto reply = c.client.get("/v1/disks/" + id);
                // Not reachable, or busy (503: starting, stopping): asked again.
                if (!reply || reply->status == 503) {
                    all_done = false;
                    break;
                }
                if (reply->status != 200)
                    return refused(*reply);
                const auto state = reply->body.value("state", "");
                states.push_back(reply->body);
                if (state == "failed" || state == "cancelled" || state == "skipped") {
                    if (c.json_out)
                        print_json(reply->body);
                    const auto reason = reply->body.value("reason", "");
                    return fail(ctl_exit::failed, reply->body.value("name", id) + " " + state +
                                                 (reason.empty() ? "" : ": " + reason));
                }
                all_done &= outcome_exit(state).has_value();
            }
            if (all_done && states.size() == ids.size()) {
                if (c.json_out)
                    print_json(states);
                int code = ctl_exit::ok;
                for (const auto& d : states) {
                    const auto state = d.value("state", "");
                    if (!c.json_out)
                        std::printf("%s: %s%s\n", d.value("name", "?").c_str(), state.c_str(),
                                    state == "warm" ? "" : (": " + d.value("reason", "")).c_str());
                    // The worst of them: not_warmable over unproven over warm.
                    code = std::max(code, outcome_exit(state).value_or(ctl_exit::failed));
                }
                return code;
            }
        }
        if (interrupted) {
            // Dies of the signal, as the shell that runs it expects of Ctrl-C: a
            // script waiting on prewarmctl stops too, and does not take it for a failure.
            std::fprintf(stderr, "prewarmctl: interrupted\n");
            ::signal(interrupted, SIG_DFL);
            ::raise(interrupted);
            return ctl_exit::failed;
        }
        if (timeout.count() && std::chrono::steady_clock::now() >= deadline)
            return fail(ctl_exit::timeout, "timed out after " + *c.args.value("timeout"));
        pause_for(std::chrono::seconds(1));
    }
}

// The way to the daemon: these options name it, so completion asks the same one.
const std::vector<std::string> daemon_options{"socket", "url", "token-file", "cacert"};

std::string words_of(const std::vector<std::string>& words) {
    std::string out;
    for (const auto& w : words)
        out += (out.empty() ? "" : " ") + w;
    return out;
}

// The completion script, made from the verbs, the options and control/schema.hh.
std::string bash_completion() {
    std::vector<std::string> commands, all_options, with_values, choices_cases;
    for (const auto& v : verbs())
        commands.push_back(v.name);
    for (const auto& o : options()) {
        all_options.push_back("--" + std::string(o.name));
        if (!o.value_name.empty())
            with_values.push_back("--" + std::string(o.name));
    }
    for (const auto& f : start_fields())
        if (!f.choices.empty())
            choices_cases.push_back("    --" + std::string(f.cli) + ") COMPREPLY=($(compgen -W \"" +
                                    words_of({f.choices.begin(), f.choices.end()}) +
                                    "\" -- \"$cur\")); return ;;");
    std::vector<std::string> settings;
    for (const auto& f : setting_fields()) {
        settings.push_back(std::string(f.cli));
        if (!f.choices.empty())
            choices_cases.push_back("    " + std::string(f.cli) + ") COMPREPLY=($(compgen -W \"" +
                                    words_of({f.choices.begin(), f.choices.end()}) +
                                    "\" -- \"$cur\")); return ;;");
    }
    std::string verb_cases;
    for (const auto& v : verbs())
        if (v.completes == "disks")
            verb_cases += (verb_cases.empty() ? "" : "|") + v.name;
        else if (!v.completes.empty())
            choices_cases.push_back("    " + v.name + ") COMPREPLY=($(compgen -W \"" + v.completes +
                                    "\" -- \"$cur\")); return ;;");
    std::vector<std::string> daemon_flags;
    for (const auto& o : daemon_options)
        daemon_flags.push_back("--" + o);
    const auto alternatives = [](const std::vector<std::string>& v) {
        std::string out;
        for (const auto& w : v)
            out += (out.empty() ? "" : "|") + w;
        return out;
    };
    std::vector<std::string> other_values;
    for (const auto& w : with_values)
        if (std::find(daemon_flags.begin(), daemon_flags.end(), w) == daemon_flags.end())
            other_values.push_back(w);
    std::string cases;
    for (const auto& c : choices_cases)
        cases += c + "\n";
    return "# bash completion for prewarmctl\n"
           "_prewarmctl() {\n"
           "    local cur prev words cword\n"
           "    _init_completion 2>/dev/null || { cur=${COMP_WORDS[COMP_CWORD]}; "
           "prev=${COMP_WORDS[COMP_CWORD-1]}; }\n"
           "    case $prev in\n"
           "    --socket|--token-file|--cacert) COMPREPLY=($(compgen -f -- \"$cur\")); return "
           ";;\n" +
           cases + "    set) COMPREPLY=($(compgen -W \"" + words_of(settings) +
           "\" -- \"$cur\")); return ;;\n"
           "    esac\n"
           "    if [[ $cur == -* ]]; then\n"
           "        COMPREPLY=($(compgen -W \"" +
           words_of(all_options) +
           "\" -- \"$cur\"))\n"
           "        return\n"
           "    fi\n"
           "    # The command is the first word that is not an option or an option's value; the\n"
           "    # way to the daemon given on the line is the one to ask for disk names.\n"
           "    local command=\"\" i\n"
           "    local -a daemon=()\n"
           "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
           "        case ${COMP_WORDS[i]} in\n"
           "        " +
           alternatives(daemon_flags) +
           ") daemon+=(\"${COMP_WORDS[i]}\" \"${COMP_WORDS[i+1]}\"); ((i++)) ;;\n"
           "        " +
           alternatives(other_values) +
           ") ((i++)) ;;\n"
           "        -*) ;;\n"
           "        *) [[ -z $command ]] && command=${COMP_WORDS[i]} ;;\n"
           "        esac\n"
           "    done\n"
           "    case $command in\n"
           "    \"\") COMPREPLY=($(compgen -W \"" +
           words_of(commands) +
           "\" -- \"$cur\")) ;;\n"
           "    " +
           verb_cases +
           ")\n"
           "        COMPREPLY=($(compgen -W \"$(prewarmctl \"${daemon[@]}\" complete-disks "
           "2>/dev/null)\" "
           "-- \"$cur\")) ;;\n"
           "    esac\n"
           "}\n"
           "complete -F _prewarmctl prewarmctl\n";
}

int complete_disks(Context& c) {
    int code = ctl_exit::ok;
    const auto list = fetch(c, "/v1/disks", code);
    if (!list)
        return code;
    for (const auto& d : (*list)["disks"]) {
        if (d.value("attached", false))
            std::printf("%s\n", d.value("name", "").c_str());
        std::printf("%s\n", d.value("id", "").c_str());
    }
    return ctl_exit::ok;
}

std::string token_from(const ParsedArgs& args, int& code) {
    if (const auto file = args.value("token-file")) {
        std::ifstream in(*file);
        if (!in) {
            code = fail(ctl_exit::usage, "--token-file " + *file + ": " + std::strerror(errno));
            return {};
        }
        std::string token;
        std::getline(in, token);
        while (!token.empty() && (token.back() == '\r' || token.back() == ' '))
            token.pop_back();
        return token;
    }
    const char* env = std::getenv("PREWARMD_TOKEN");
    return env ? env : "";
}

const std::vector<Verb>& verbs() {
    static const std::vector<Verb> table = [] {
        using T = Verb::Takes;
        const auto choices = [](const Field& f) {
            std::string out;
            for (const auto& c : f.choices)
                out += (out.empty() ? "" : "|") + std::string(c);
            return out;
        };
        std::vector<Verb> t = {
            {"status",
             "",
             "every disk: size, state, progress, rate, ETA",
             T::nothing,
             "",
             {},
             [](Context& c, const std::vector<std::string>&) { return status(c); }},
            {"show",
             "DISK",
             "one disk in detail",
             T::one_disk,
             "disks",
             {},
             [](Context& c, const std::vector<std::string>& w) { return show(c, w[0]); }},
            {"probe",
             "DISK",
             "probe it now: first-write latency, granularity; once warmed, the warm places "
             "(exit 1: the warming did not stick)",
             T::one_disk,
             "disks",
             {},
             [](Context& c, const std::vector<std::string>& w) { return probe(c, w[0]); }},
        };
        // The actions on a disk, as control/schema.hh declares them.
        for (const auto& a : action_specs()) {
            Verb v{std::string(a.name),
                   "DISK",
                   std::string(a.summary),
                   T::one_disk,
                   "disks",
                   {},
                   nullptr};
            if (a.takes_start_options)
                for (const auto& f : start_fields()) {
                    v.options.push_back(std::string(f.cli));
                    v.args += " [--" + std::string(f.cli) + " " +
                              (f.choices.empty() ? std::string(f.example) : choices(f)) + "]";
                }
            v.run = [](Context& c, const std::vector<std::string>& w) {
                return act(c, c.command, w[0]);
            };
            t.push_back(std::move(v));
        }
        std::string settings;
        for (const auto& f : setting_fields())
            settings += (settings.empty() ? "" : ", ") + std::string(f.cli) + " " +
                        (f.choices.empty() ? std::string(f.example) : choices(f));
        t.insert(
            t.end(),
            {
                {"watch",
                 "[--interval D]",
                 "the status, live, until Ctrl-C",
                 T::nothing,
                 "",
                 {"interval"},
                 [](Context& c, const std::vector<std::string>&) { return watch(c); }},
                {"wait",
                 "DISK... [--timeout D]",
                 "until each is warm: exit 0; unproven: 8, not_warmable: 9; a failed, "
                 "cancelled or skipped one: 1",
                 T::disks,
                 "disks",
                 {"timeout"},
                 wait_for},
                {"set",
                 "SETTING VALUE",
                 "a setting of the running daemon: " + settings,
                 T::words,
                 "",
                 {},
                 set},
                {"settings",
                 "",
                 "the settings in force",
                 T::nothing,
                 "",
                 {},
                 [](Context& c, const std::vector<std::string>&) {
                     return prewarmd::ctl::settings(c, std::nullopt);
                 }},
                {"completion",
                 "bash",
                 "a bash completion script",
                 T::words,
                 "bash",
                 {},
                 [](Context&, const std::vector<std::string>& w) {
                     if (w.size() != 1 || w[0] != "bash")
                         return fail(ctl_exit::usage, "completion bash");
                     std::fputs(bash_completion().c_str(), stdout);
                     return ctl_exit::ok;
                 }},
                {"complete-disks",
                 "",
                 "disk names and ids, a line each (for completion)",
                 T::nothing,
                 "",
                 {},
                 [](Context& c, const std::vector<std::string>&) { return complete_disks(c); }},
            });
        return t;
    }();
    return table;
}

int run(int argc, char** argv) {
    const std::vector<std::string> raw(argv + 1, argv + argc);
    auto parsed = parse_args(raw, options());
    if (!parsed)
        return fail(ctl_exit::usage, parsed.error().message + " (prewarmctl --help)");
    const auto& args = *parsed;
    if (args.has("help")) {
        std::fputs(usage().c_str(), stdout);
        return ctl_exit::ok;
    }
    if (args.has("version")) {
        std::printf("prewarmctl %s\n", PREWARMD_VERSION);
        return ctl_exit::ok;
    }
    const auto& words = args.positional;
    if (words.empty())
        return fail(ctl_exit::usage, "which command? (prewarmctl --help)");
    const auto& command = words[0];
    const auto verb = std::find_if(verbs().begin(), verbs().end(),
                                   [&](const Verb& v) { return v.name == command; });
    if (verb == verbs().end())
        return fail(ctl_exit::usage, "unknown command '" + command + "' (prewarmctl --help)");
    // Options of one command only: elsewhere they would be silently ignored.
    for (const auto& v : verbs())
        for (const auto& option : v.options)
            if (args.has(option) && v.name != command)
                return fail(ctl_exit::usage, "--" + option + " is for " + v.name + " only");
    const std::vector<std::string> rest(words.begin() + 1, words.end());
    switch (verb->takes) {
    case Verb::Takes::nothing:
        if (!rest.empty())
            return fail(ctl_exit::usage, command + " takes no arguments");
        break;
    case Verb::Takes::one_disk:
        if (rest.size() != 1)
            return fail(ctl_exit::usage, command + " takes one DISK");
        break;
    case Verb::Takes::disks:
        if (rest.empty())
            return fail(ctl_exit::usage, command + ": which disks? (" + command + " DISK...)");
        break;
    case Verb::Takes::words:
        break;
    }

    int code = ctl_exit::ok;
    Target target;
    if (const char* env = std::getenv("PREWARMD_SOCKET"))
        target.socket = env;
    if (const char* env = std::getenv("PREWARMD_URL"))
        target.url = env;
    if (const auto s = args.value("socket")) {
        target.socket = *s;
        target.url.clear();
    }
    if (const auto u = args.value("url"))
        target.url = *u;
    if (const auto ca = args.value("cacert"))
        target.ca_file = *ca;
    target.token = token_from(args, code);
    if (code != ctl_exit::ok)
        return code;
    Client client(target);
    Context c{client, args, command, {}, args.has("json")};
    c.style.color = ::isatty(STDOUT_FILENO) && !args.has("no-color") && !std::getenv("NO_COLOR");
    return verb->run(c, rest);
}

} // namespace
} // namespace prewarmd::ctl

int main(int argc, char** argv) {
    return prewarmd::ctl::run(argc, argv);
}
