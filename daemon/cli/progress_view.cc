#include "cli/progress_view.hh"

#include <cstdio>

#include "base/units.hh"

namespace prewarmd {
namespace {

std::string milliseconds(std::chrono::microseconds us) {
    return format_ms(static_cast<double>(us.count()) / 1e6);
}

} // namespace

std::string progress_line(const ProgressSnapshot& s) {
    char pct[16];
    std::snprintf(pct, sizeof pct, "%5.1f%%", s.ratio() * 100);
    std::string line = std::string(pct) + "  " + format_size(s.done_bytes) + " of " +
                       format_size(s.total_bytes) + "  " + format_rate(s.rate_10s_bytes_per_s);
    if (s.eta)
        line += "  ETA " + format_duration(*s.eta);
    if (s.status != JobStatus::running)
        line += "  (" + std::string(to_string(s.status)) + ")";
    return line;
}

std::string summary_text(const std::string& name, const ProgressSnapshot& s) {
    const auto seconds = std::chrono::duration<double>(s.elapsed).count();
    char took[32];
    std::snprintf(took, sizeof took, "%.1f s", seconds);
    std::string text = std::string(to_string(s.status)) + ": " + name + ", " +
                       format_size(s.done_bytes - s.resumed_bytes) + " in " + took + " (" +
                       format_rate(s.rate_avg_bytes_per_s) + ")";
    if (s.resumed_bytes)
        text += ", resumed with " + format_size(s.resumed_bytes) + " visited before";
    text += "\n  written " + format_size(s.written_bytes) + ", skipped " +
            format_size(s.skipped_bytes) + " (held data), read " + format_size(s.read_bytes) + "\n";
    const auto& l = s.write_latency;
    if (l.count)
        text += "  write latency: p50 " + milliseconds(l.p50) + ", p90 " + milliseconds(l.p90) +
                ", p99 " + milliseconds(l.p99) + ", max " + milliseconds(l.max) + " (" +
                std::to_string(l.count) + " writes)\n";
    if (!s.reason.empty())
        text += "  " + s.reason + "\n";
    return text;
}

} // namespace prewarmd
