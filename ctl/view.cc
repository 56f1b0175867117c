#include "view.hh"

#include <algorithm>
#include <array>
#include <cstdio>
#include <vector>

#include "base/units.hh"

namespace prewarmd::ctl {
namespace {

using json = nlohmann::json;

std::string paint(const std::string& text, const std::string& state, const Style& style) {
    if (!style.color)
        return text;
    const char* code = nullptr;
    if (state == "warm")
        code = "32"; // green
    else if (state == "unproven" || state == "not_warmable")
        code = "35"; // magenta: finished, not warm
    else if (state == "running")
        code = "36"; // cyan
    else if (state == "failed")
        code = "31"; // red
    else if (state == "paused" || state == "waiting" || state == "queued" || state == "detached")
        code = "33"; // yellow
    else if (state == "skipped" || state == "cancelled" || state == "released")
        code = "2"; // dim
    return code ? "\033[" + std::string(code) + "m" + text + "\033[0m" : text;
}

std::string text_of(const json& value, const char* key, const char* fallback = "") {
    const auto it = value.find(key);
    return it != value.end() && it->is_string() ? it->get<std::string>() : fallback;
}

uint64_t number_of(const json& value, const char* key) {
    const auto it = value.find(key);
    return it != value.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

double real_of(const json& value, const char* key) {
    const auto it = value.find(key);
    return it != value.end() && it->is_number() ? it->get<double>() : 0;
}

bool active(const std::string& state) {
    return state == "running" || state == "paused";
}

std::string percent(double ratio) {
    char text[16];
    std::snprintf(text, sizeof text, "%3.0f%%", ratio * 100);
    return text;
}

std::string eta_of(const json& progress) {
    const auto it = progress.find("eta_seconds");
    if (it == progress.end() || !it->is_number())
        return "-";
    return format_duration(std::chrono::seconds(it->get<int64_t>()));
}

std::string pad(std::string text, size_t width) {
    if (text.size() < width)
        text.append(width - text.size(), ' ');
    return text;
}

} // namespace

double progress_of(const json& disk) {
    const auto progress = disk.value("progress", json::object());
    return std::clamp(real_of(progress, "progress_ratio"), 0.0, 1.0);
}

std::string status_table(const json& disks, const Style& style) {
    constexpr size_t columns = 7;
    std::vector<std::array<std::string, columns>> rows = {
        {"DISK", "SIZE", "STATE", "PROGRESS", "RATE", "ETA", "ID"}};
    std::vector<std::string> states = {""};
    for (const auto& d : disks) {
        const auto state = text_of(d, "state", "?");
        const auto progress = d.value("progress", json::object());
        const bool moving = text_of(d, "state") == "running";
        rows.push_back({text_of(d, "name", "?"), format_size(number_of(d, "size_bytes")), state,
                        progress_bar(progress_of(d), 20) + " " + percent(progress_of(d)),
                        moving ? format_rate(real_of(progress, "rate_10s_bytes_per_s")) : "-",
                        moving ? eta_of(progress) : "-", text_of(d, "id")});
        states.push_back(state);
    }
    std::array<size_t, columns> width{};
    for (const auto& row : rows)
        for (size_t c = 0; c < columns; ++c)
            width[c] = std::max(width[c], row[c].size());
    std::string out;
    for (size_t r = 0; r < rows.size(); ++r) {
        std::string line;
        for (size_t c = 0; c < columns; ++c) {
            auto cell = c + 1 < columns ? pad(rows[r][c], width[c] + 2) : rows[r][c];
            line += c == 2 && r > 0 ? paint(cell, states[r], style) : cell;
        }
        out += line + "\n";
    }
    if (rows.size() == 1)
        out += "(no disks known)\n";
    return out;
}

std::string disk_details(const json& d, const Style& style) {
    const auto progress = d.value("progress", json::object());
    const auto state = text_of(d, "state", "?");
    std::string out = text_of(d, "name", "?") + " (" + text_of(d, "id") + ")\n";
    const auto field = [&](const char* name, const std::string& value) {
        out += "  " + pad(std::string(name) + ":", 11) + value + "\n";
    };
    field("device", text_of(d, "devnode", "-") + ", " + format_size(number_of(d, "size_bytes")) +
                        (d.value("attached", false) ? ", attached" : ", not attached"));
    std::string reasons;
    for (const auto& r : d.value("verdict_reasons", json::array()))
        if (r.is_string())
            reasons += (reasons.empty() ? "" : "; ") + r.get<std::string>();
    field("verdict", text_of(d, "verdict", "?") + (reasons.empty() ? "" : ": " + reasons));
    const auto reason = text_of(d, "reason");
    const auto since = text_of(d, "state_since");
    field("state", paint(state, state, style) + (reason.empty() ? "" : ": " + reason) +
                       (since.empty() ? "" : " (since " + since + ")"));
    if (const auto fs = d.value("filesystem", json()); fs.is_object())
        field("job", "filesystem: the free space of " + text_of(fs, "fstype") + " on " +
                         text_of(fs, "device") + " at " + text_of(fs, "mount_point"));
    else
        field("job", "block: the whole disk");
    const auto total = number_of(progress, "total_bytes");
    field("progress", progress_bar(progress_of(d), 30) + " " + percent(progress_of(d)) +
                          (total ? "  " + format_size(number_of(progress, "done_bytes")) + " of " +
                                       format_size(total)
                                 : ""));
    if (active(state)) {
        const auto limit = number_of(progress, "rate_limit_bytes_per_s");
        // Under adaptive mode the limit is its doing: say what it does, not "1 B/s".
        const auto adaptive = text_of(d, "adaptive");
        field("rate", format_rate(real_of(progress, "rate_10s_bytes_per_s")) + " (10 s), " +
                          format_rate(real_of(progress, "rate_avg_bytes_per_s")) + " on average" +
                          (!adaptive.empty() ? "; " + adaptive
                           : limit ? "; at most " + format_rate(static_cast<double>(limit))
                                   : ""));
        field("eta", eta_of(progress));
    }
    if (total) {
        field("written", format_size(number_of(progress, "written_bytes")) + ", skipped " +
                             format_size(number_of(progress, "skipped_bytes")) + " (held data)");
        const auto latency = progress.value("write_latency_us", json::object());
        if (number_of(latency, "count")) {
            char text[96];
            std::snprintf(text, sizeof text, "p50 %.1f ms, p99 %.1f ms, max %.1f ms",
                          real_of(latency, "p50") / 1000, real_of(latency, "p99") / 1000,
                          real_of(latency, "max") / 1000);
            field("writes", text);
        }
        const auto mode = text_of(progress, "mode");
        if (!mode.empty())
            field("mode", mode +
                              (text_of(progress, "strategy").empty()
                                   ? ""
                                   : ", " + text_of(progress, "strategy")) +
                              (text_of(progress, "io_engine").empty()
                                   ? ""
                                   : ", " + text_of(progress, "io_engine")));
    }
    const auto probe = d.value("probe", json());
    if (probe.is_object()) {
        const auto latency = [&](const char* phase) {
            const auto l = probe.value(phase, json());
            char text[64];
            std::snprintf(text, sizeof text, "p50 %.2f ms, p99 %.2f ms",
                          real_of(l, "p50_seconds") * 1000, real_of(l, "p99_seconds") * 1000);
            return std::string(text);
        };
        const auto granularity = number_of(probe, "granularity_bytes");
        field("cold", latency("cold") + " (first writes); granularity " +
                          (granularity ? format_size(granularity) : std::string("unknown")));
        field("allocation", probe.value("allocation", std::string("unknown")) + ": " +
                                probe.value("allocation_note", std::string()));
        const auto zero_writes = probe.value("zero_writes", std::string("unknown"));
        field("zero writes", (zero_writes == "discarded"
                                  ? paint("this backend discards zero writes", "failed", style)
                                  : zero_writes) +
                                 ": " + probe.value("zero_writes_note", std::string()));
        if (probe.value("warm", json()).is_object()) {
            char ratio[32];
            std::snprintf(ratio, sizeof ratio, "%.1fx", real_of(probe, "penalty_ratio"));
            const bool stuck = probe.value("warming_stuck", false);
            field("warm",
                  latency("warm") + ", cold/warm " + ratio +
                      (stuck ? "" : "; " + paint("warming did not stick", "failed", style)));
        }
    }
    return out;
}

} // namespace prewarmd::ctl
