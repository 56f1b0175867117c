#include "cli/probe_command.hh"

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/args.hh"
#include "base/atomic_file.hh"
#include "base/json_text.hh"
#include "base/units.hh"
#include "cli/command.hh"
#include "io/device.hh"
#include "measurement/probe.hh"

namespace prewarmd {
namespace {

constexpr OptionSpec probe_options[] = {
    {"samples", 0, "N", "places sampled, one per stride of the disk, 1 to 256 (default 16)"},
    {"save", 0, "FILE", "keep the cold probe's result in FILE, for --warm --against"},
    {"warm", 0, "", "probe the warm places (after a prefill) instead"},
    {"against", 0, "FILE", "with --warm: compare with the cold probe saved in FILE"},
    {"json", 0, "", "print the result as JSON"},
    {"help", 'h', "", "this text"},
};

std::string usage() {
    return "Usage: prewarmd probe [OPTIONS] DEVICE\n\n"
           "Measures what a first write costs on DEVICE: the read speed of never-written\n"
           "space, the latency of first writes at N places (p50, p99) and of the same places\n"
           "written again, and the backend's allocation granularity (64 KiB to 4 MiB).\n"
           "With --warm, after a prefill: the latency at places half a stride on, which the\n"
           "cold probe never touched; with --against, the penalty ratio, and a warning when\n"
           "the warming did not stick. Every write puts back the bytes it read: what DEVICE\n"
           "reads back never changes. A block device is opened exclusively.\n\n" +
           options_help(probe_options) +
           "\nExit status: 0 measured; 1 an I/O error, or the warming did not stick;\n"
           "2 bad usage; 6 refused (in use, or read-only).\n";
}

std::string latency_text(const ProbeLatency& s) {
    return "p50 " + format_ms(s.p50_s, 3) + ", p99 " + format_ms(s.p99_s, 3) + " (" +
           std::to_string(s.samples) + " places)";
}

} // namespace

int probe_command(const std::vector<std::string>& args) {
    const auto fail = [](int code, const std::string& message) {
        return command_error("probe", code, message);
    };
    ParsedArgs parsed;
    if (const auto done = start_command("probe", args, probe_options, usage, parsed))
        return *done;
    if (parsed.positional.size() != 1)
        return fail(exit_usage,
                    parsed.positional.empty() ? "no DEVICE given (see --help)" : "one DEVICE only");
    const auto& path = parsed.positional[0];
    ProbeOptions options;
    if (const auto text = parsed.value("samples")) {
        auto n = parse_count(*text, 1, 256);
        if (!n)
            return fail(exit_usage, "--samples: " + n.error().message);
        options.samples = static_cast<unsigned>(*n);
    }
    const bool warm = parsed.has("warm");
    if (parsed.has("against") && !warm)
        return fail(exit_usage, "--against goes with --warm");
    if (parsed.has("save") && warm)
        return fail(exit_usage, "--save keeps a cold probe: not with --warm");
    const bool json = parsed.has("json");

    auto device = Device::open(path, Device::Access::write);
    if (!device) {
        const int err = -device.error().err;
        const bool refused = err == EBUSY || err == EROFS || err == EACCES || err == EPERM;
        return fail(refused ? exit_refused : exit_usage, device.error().message);
    }

    if (!warm) {
        auto cold = probe_cold(*device, options);
        if (!cold)
            return fail(cold.error().err == -EINVAL ? exit_usage : exit_failed,
                        path + ": " + cold.error().message);
        const auto out = to_json(ProbeFigures{*cold, std::nullopt});
        if (const auto save = parsed.value("save"))
            if (auto saved = write_file_atomically(*save, out.dump(2) + "\n", 0644); !saved)
                return fail(exit_failed, *save + ": " + saved.error().message);
        if (json) {
            std::printf("%s\n", json_text(out, 2).c_str());
            return exit_ok;
        }
        std::printf("%s:\n", path.c_str());
        std::printf("  reading never-written space: %s\n",
                    format_rate(cold->zero_read_bytes_per_s).c_str());
        std::printf("  4 KiB reads of it:           %s\n", latency_text(cold->never_read).c_str());
        std::printf("  first writes (cold):         %s\n", latency_text(cold->cold).c_str());
        std::printf("  the same places again:       %s\n", latency_text(cold->rewrite).c_str());
        std::printf("  first-write penalty:         %.1fx\n",
                    penalty_ratio(cold->cold, cold->rewrite));
        std::printf("  allocation granularity:      %s (%s)\n",
                    cold->granularity_bytes ? format_size(cold->granularity_bytes).c_str()
                                            : "unknown",
                    cold->granularity_note.c_str());
        std::printf("  a write beside a first one:  %s\n", latency_text(cold->beside).c_str());
        std::printf("  allocation:                  %s (%s)\n",
                    std::string(to_string(cold->allocation)).c_str(),
                    cold->allocation_note.c_str());
        std::printf("  zero writes:                 %s (%s)\n",
                    std::string(to_string(cold->zero_writes)).c_str(),
                    cold->zero_writes_note.c_str());
        return exit_ok;
    }

    const unsigned strides = probe_strides(device->geometry().size_bytes, options.samples);
    if (!strides)
        return fail(exit_usage, path + ": too small to probe (8 MiB at least)");
    auto measured = probe_warm(*device, strides);
    if (!measured)
        return fail(exit_failed, path + ": " + measured.error().message);
    ProbeFigures figures{std::nullopt, *measured};
    if (const auto against = parsed.value("against")) {
        std::ifstream in(*against);
        std::stringstream text;
        text << in.rdbuf();
        figures = probe_figures_from(nlohmann::json::parse(text.str(), nullptr, false));
        if (!in || !figures.cold)
            return fail(exit_usage, *against + ": not a cold probe saved by --save");
        if (figures.cold->strides != strides)
            return fail(exit_usage, *against + ": saved with another --samples or disk size");
        figures.warm = *measured;
    }
    const bool stuck = !figures.cold || !still_cold(*figures.cold, *measured);
    const auto out = figures.cold ? to_json(figures)
                                  : nlohmann::json{{"warm", to_json(measured->warm)},
                                                   {"warm_reference", to_json(measured->reference)},
                                                   {"warm_over_reference", measured->ratio_p50}};
    if (json) {
        std::printf("%s\n", json_text(out, 2).c_str());
    } else {
        std::printf("%s:\n  warm places:                 %s\n", path.c_str(),
                    latency_text(measured->warm).c_str());
        std::printf("  places written before:       %s\n",
                    latency_text(measured->reference).c_str());
        if (figures.cold)
            std::printf("  cold over warm (p50):        %.1fx\n",
                        penalty_ratio(figures.cold->cold, measured->warm));
    }
    if (!stuck) {
        std::fprintf(stderr,
                     "prewarmd probe: warning: warming did not stick: the warm places still "
                     "write as slowly as cold ones (a backend that drops zero writes?)\n");
        return exit_failed;
    }
    return exit_ok;
}

} // namespace prewarmd
