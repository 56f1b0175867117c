#include "options.hh"

#include <cerrno>
#include <charconv>
#include <optional>

#include "base/units.hh"

namespace cowsim {

using prewarmd::Error;
using prewarmd::Result;

const char* const usage_text = R"(Usage: cowsim [OPTIONS] --disk SPEC... MOUNTPOINT

Serves thin copy-on-write disks as files under MOUNTPOINT (FUSE), to be attached
as loop devices. A block never written reads as zeros at memory speed; the first
write to a block writes all of it to the store and pays the allocation latency.

Disks:
  -d, --disk NAME=SIZE[,OPT...]  a disk (repeatable); OPT is one of
                                 block=SIZE   backend block size
                                 bitmap=on|off  VHD-like sector bitmap
                                 store=FILE   backing file (default STORE_DIR/NAME.img)
                                 parent=FILE  parent image: a clone reads it through
  -s, --store-dir DIR            where stores live when a disk names none
  -b, --block-size SIZE          default backend block size (default 2MiB)
      --bitmap                   sector-bitmap mode for every disk: a write touching
                                 never-written sectors pays a metadata sync

The backend, shared by all disks:
      --alloc-latency DURATION   added to each block allocation (default 1ms)
      --sync-latency DURATION    a metadata sync in bitmap mode (default 2ms)
      --bandwidth RATE           link bandwidth, e.g. 200MiB/s (default unlimited)
      --concurrency N            operations in flight at once (default unlimited)
      --capacity SIZE            space for allocations; beyond it ENOSPC (default
                                 unlimited)

Other:
      --threads N                FUSE worker threads (default 16)
  -h, --help                     this text
      --version                  the version

Files under MOUNTPOINT: one per disk, .stats (JSON counters) and .control (write
commands: fail, delay, clear, vanish, appear, capacity; see docs/cowsim.md).
Sizes take units (KiB, MiB, GiB, TiB); durations too (us, ms, s).
)";

namespace {

Result<unsigned> parse_count(std::string_view option, std::string_view text, unsigned min,
                             unsigned max) {
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size() || value < min || value > max)
        return Error{-EINVAL, std::string(option) + ": expected a whole number from " +
                                  std::to_string(min) + " to " + std::to_string(max) + ", got '" +
                                  std::string(text) + "'"};
    return value;
}

struct DiskSpec {
    DiskConfig config;
    std::optional<uint64_t> block_bytes;
    std::optional<bool> bitmap;
};

Result<DiskSpec> parse_disk(std::string_view spec) {
    const auto bad = [&](const std::string& why) {
        return Error{-EINVAL, "--disk '" + std::string(spec) + "': " + why};
    };
    DiskSpec out;
    size_t start = 0;
    bool first = true;
    while (start <= spec.size()) {
        const auto comma = spec.find(',', start);
        const auto item = spec.substr(
            start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
        start = comma == std::string_view::npos ? spec.size() + 1 : comma + 1;
        const auto eq = item.find('=');
        const auto key = item.substr(0, eq);
        const auto value = eq == std::string_view::npos ? std::string_view{} : item.substr(eq + 1);
        if (first) {
            first = false;
            if (eq == std::string_view::npos || key.empty())
                return bad("expected NAME=SIZE first");
            out.config.name = std::string(key);
            auto size = prewarmd::parse_size(value);
            if (!size)
                return bad(size.error().message);
            out.config.size_bytes = *size;
        } else if (key == "block" && !value.empty()) {
            auto size = prewarmd::parse_size(value);
            if (!size)
                return bad(size.error().message);
            out.block_bytes = *size;
        } else if (key == "bitmap") {
            if (value == "on" || value.empty())
                out.bitmap = true;
            else if (value == "off")
                out.bitmap = false;
            else
                return bad("bitmap is on or off");
        } else if (key == "store" && !value.empty()) {
            out.config.store_path = std::string(value);
        } else if (key == "parent" && !value.empty()) {
            out.config.parent_path = std::string(value);
        } else {
            return bad("unknown option '" + std::string(item) +
                       "' (block=, bitmap=, store=, parent=)");
        }
    }
    return out;
}

} // namespace

Result<Options> parse_options(const std::vector<std::string>& args) {
    Options options;
    std::vector<DiskSpec> specs;
    std::string store_dir;
    uint64_t block_bytes = 2 * 1024 * 1024;
    bool bitmap = false;

    for (size_t i = 0; i < args.size(); ++i) {
        std::string arg = args[i];
        std::optional<std::string> inline_value;
        if (arg.rfind("--", 0) == 0) {
            if (const auto eq = arg.find('='); eq != std::string::npos) {
                inline_value = arg.substr(eq + 1);
                arg = arg.substr(0, eq);
            }
        }
        const auto value = [&]() -> Result<std::string> {
            if (inline_value)
                return *inline_value;
            if (i + 1 >= args.size())
                return Error{-EINVAL, arg + " needs a value"};
            return args[++i];
        };
        const auto flag = [&]() -> Result<void> {
            if (inline_value)
                return Error{-EINVAL, arg + " takes no value"};
            return {};
        };
        Result<void> ok;
        if (arg == "-h" || arg == "--help") {
            ok = flag();
            options.help = true;
        } else if (arg == "--version") {
            ok = flag();
            options.version = true;
        } else if (arg == "--bitmap") {
            ok = flag();
            bitmap = true;
        } else if (arg == "-d" || arg == "--disk") {
            auto v = value();
            if (!v)
                return v.error();
            auto spec = parse_disk(*v);
            if (!spec)
                return spec.error();
            specs.push_back(std::move(*spec));
        } else if (arg == "-s" || arg == "--store-dir") {
            auto v = value();
            if (!v)
                return v.error();
            store_dir = *v;
        } else if (arg == "-b" || arg == "--block-size" || arg == "--capacity") {
            auto v = value();
            if (!v)
                return v.error();
            auto size = prewarmd::parse_size(*v);
            if (!size)
                return Error{-EINVAL, arg + ": " + size.error().message};
            if (arg == "--capacity")
                options.backend.capacity_bytes = *size;
            else
                block_bytes = *size;
        } else if (arg == "--alloc-latency" || arg == "--sync-latency") {
            auto v = value();
            if (!v)
                return v.error();
            auto duration = prewarmd::parse_duration(*v);
            if (!duration)
                return Error{-EINVAL, arg + ": " + duration.error().message};
            (arg == "--alloc-latency" ? options.backend.alloc_latency
                                      : options.backend.sync_latency) = *duration;
        } else if (arg == "--bandwidth") {
            auto v = value();
            if (!v)
                return v.error();
            auto rate = prewarmd::parse_rate(*v);
            if (!rate)
                return Error{-EINVAL, arg + ": " + rate.error().message};
            options.backend.bandwidth_bytes_per_s = *rate;
        } else if (arg == "--concurrency" || arg == "--threads") {
            auto v = value();
            if (!v)
                return v.error();
            auto n = parse_count(arg, *v, 1, 1024);
            if (!n)
                return n.error();
            (arg == "--threads" ? options.threads : options.backend.concurrency) = *n;
        } else if (!arg.empty() && arg[0] == '-') {
            return Error{-EINVAL, "unknown option '" + arg + "' (see --help)"};
        } else if (options.mountpoint.empty()) {
            options.mountpoint = arg;
        } else {
            return Error{-EINVAL, "unexpected argument '" + arg + "': one MOUNTPOINT only"};
        }
        if (!ok)
            return ok.error();
    }
    if (options.help || options.version)
        return options;
    if (options.mountpoint.empty())
        return Error{-EINVAL, "no MOUNTPOINT given (see --help)"};
    if (specs.empty())
        return Error{-EINVAL, "no --disk given (see --help)"};
    for (auto& spec : specs) {
        auto config = spec.config;
        config.block_bytes = spec.block_bytes.value_or(block_bytes);
        config.sector_bitmap = spec.bitmap.value_or(bitmap);
        if (config.store_path.empty()) {
            if (store_dir.empty())
                return Error{-EINVAL, "disk " + config.name +
                                          " has no store=FILE and no --store-dir is given"};
            config.store_path = store_dir + "/" + config.name + ".img";
        }
        options.disks.push_back(std::move(config));
    }
    return options;
}

} // namespace cowsim
