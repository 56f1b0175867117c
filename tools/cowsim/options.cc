#include "options.hh"

#include <cerrno>
#include <charconv>
#include <optional>

#include "base/args.hh"
#include "base/units.hh"

namespace cowsim {

using prewarmd::Error;
using prewarmd::options_help;
using prewarmd::OptionSpec;
using prewarmd::parse_args;
using prewarmd::Result;

namespace {

constexpr OptionSpec option_specs[] = {
    {"disk", 'd', "NAME=SIZE[,OPT...]",
     "a disk (repeatable); OPT is block=SIZE, bitmap=on|off,\n"
     "zeroes=off|on|unmap (detect-zeroes: writes of zeros allocate\n"
     "nothing; unmap also gives back a block they cover),\n"
     "allocations=N (new blocks allocated at once; 1: tapdisk's VHD),\n"
     "store=FILE (default STORE_DIR/NAME.img) or parent=FILE (a clone)"},
    {"store-dir", 's', "DIR", "where stores live when a disk names none"},
    {"block-size", 'b', "SIZE", "default backend block size (default 2MiB)"},
    {"bitmap", 0, "",
     "sector-bitmap mode for every disk: a write touching\n"
     "never-written sectors pays a metadata sync"},
    {"alloc-latency", 0, "DURATION", "added to each block allocation (default 1ms)"},
    {"sync-latency", 0, "DURATION", "a metadata sync in bitmap mode (default 2ms)"},
    {"host-allocation", 0, "",
     "blocks are allocated on the storage host: the link carries\n"
     "only each write's own bytes, not the whole block"},
    {"bandwidth", 0, "RATE", "backend link bandwidth, e.g. 200MiB/s (default unlimited)"},
    {"concurrency", 0, "N", "backend operations in flight at once (default unlimited)"},
    {"capacity", 0, "SIZE", "space for allocations; beyond it ENOSPC (default unlimited)"},
    {"threads", 0, "N", "FUSE worker threads (default 16)"},
    {"help", 'h', "", "this text"},
    {"version", 0, "", "the version"},
};

} // namespace

std::string usage() {
    return "Usage: cowsim [OPTIONS] --disk SPEC... MOUNTPOINT\n\n"
           "Serves thin copy-on-write disks as files under MOUNTPOINT (FUSE), to be attached\n"
           "as loop devices. A block never written reads as zeros at memory speed; the first\n"
           "write to a block writes all of it to the store and pays the allocation latency.\n"
           "The backend options are shared by all disks, as one storage repository.\n\n" +
           options_help(option_specs) +
           "\nFiles under MOUNTPOINT: one per disk, .stats (JSON counters) and .control (write\n"
           "commands: fail, delay, clear, vanish, appear, capacity; see docs/cowsim.md).\n"
           "Sizes take units (KiB, MiB, GiB, TiB); durations too (us, ms, s).\n";
}

namespace {

struct DiskSpec {
    DiskConfig config;
    std::optional<uint64_t> block_bytes;
    std::optional<bool> bitmap;
};

std::optional<Zeroes> parse_zeroes(std::string_view text) {
    if (text == "off")
        return Zeroes::off;
    if (text == "on")
        return Zeroes::on;
    if (text == "unmap")
        return Zeroes::unmap;
    return std::nullopt;
}

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
        } else if (key == "zeroes") {
            const auto zeroes = parse_zeroes(value);
            if (!zeroes)
                return bad("zeroes is off, on or unmap");
            out.config.zeroes = *zeroes;
        } else if (key == "allocations") {
            unsigned n = 0;
            const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
            if (ec != std::errc{} || end != value.data() + value.size() || n == 0)
                return bad("allocations is a count from 1");
            out.config.allocations = n;
        } else if (key == "store" && !value.empty()) {
            out.config.store_path = std::string(value);
        } else if (key == "parent" && !value.empty()) {
            out.config.parent_path = std::string(value);
        } else {
            return bad("unknown option '" + std::string(item) +
                       "' (block=, bitmap=, zeroes=, allocations=, store=, parent=)");
        }
    }
    return out;
}

} // namespace

Result<Options> parse_options(const std::vector<std::string>& args) {
    auto parsed = parse_args(args, option_specs);
    if (!parsed)
        return parsed.error();
    Options options;
    options.help = parsed->has("help");
    options.version = parsed->has("version");
    if (options.help || options.version)
        return options;

    const auto size_option = [&](const char* name, uint64_t fallback) -> Result<uint64_t> {
        const auto text = parsed->value(name);
        if (!text)
            return fallback;
        auto size = prewarmd::parse_size(*text);
        if (!size)
            return Error{-EINVAL, std::string("--") + name + ": " + size.error().message};
        return size;
    };
    auto block_bytes = size_option("block-size", 2 * 1024 * 1024);
    if (!block_bytes)
        return block_bytes.error();
    auto capacity = size_option("capacity", 0);
    if (!capacity)
        return capacity.error();
    options.backend.capacity_bytes = *capacity;
    options.backend.host_allocation = parsed->has("host-allocation");
    for (const auto* name : {"alloc-latency", "sync-latency"})
        if (const auto text = parsed->value(name)) {
            auto duration = prewarmd::parse_duration(*text);
            if (!duration)
                return Error{-EINVAL, std::string("--") + name + ": " + duration.error().message};
            (name == std::string_view("alloc-latency") ? options.backend.alloc_latency
                                                       : options.backend.sync_latency) = *duration;
        }
    if (const auto text = parsed->value("bandwidth")) {
        auto rate = prewarmd::parse_rate(*text);
        if (!rate)
            return Error{-EINVAL, "--bandwidth: " + rate.error().message};
        options.backend.bandwidth_bytes_per_s = *rate;
    }
    for (const auto* name : {"concurrency", "threads"})
        if (const auto text = parsed->value(name)) {
            auto n = prewarmd::parse_count(*text, 1, 1024);
            if (!n)
                return Error{-EINVAL, std::string("--") + name + ": " + n.error().message};
            (name == std::string_view("threads") ? options.threads : options.backend.concurrency) =
                static_cast<unsigned>(*n);
        }

    if (parsed->positional.empty())
        return Error{-EINVAL, "no MOUNTPOINT given (see --help)"};
    if (parsed->positional.size() > 1)
        return Error{-EINVAL,
                     "unexpected argument '" + parsed->positional[1] + "': one MOUNTPOINT only"};
    options.mountpoint = parsed->positional[0];
    const auto specs = parsed->values("disk");
    if (specs.empty())
        return Error{-EINVAL, "no --disk given (see --help)"};
    const auto store_dir = parsed->value("store-dir");
    const bool bitmap = parsed->has("bitmap");
    for (const auto& text : specs) {
        auto spec = parse_disk(text);
        if (!spec)
            return spec.error();
        auto config = spec->config;
        config.block_bytes = spec->block_bytes.value_or(*block_bytes);
        config.sector_bitmap = spec->bitmap.value_or(bitmap);
        if (config.store_path.empty()) {
            if (!store_dir)
                return Error{-EINVAL, "disk " + config.name +
                                          " has no store=FILE and no --store-dir is given"};
            config.store_path = *store_dir + "/" + config.name + ".img";
        }
        options.disks.push_back(std::move(config));
    }
    return options;
}

} // namespace cowsim
