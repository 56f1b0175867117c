// cowsim: a FUSE copy-on-write disk simulator, the test bed for prewarmd.
#include <cstdio>
#include <string>
#include <vector>

#include "base/units.hh"
#include "fuse_fs.hh"
#include "options.hh"
#include "simulator.hh"

int main(int argc, char** argv) {
    const std::vector<std::string> args(argv + 1, argv + argc);
    auto options = cowsim::parse_options(args);
    if (!options) {
        std::fprintf(stderr, "cowsim: %s\n", options.error().message.c_str());
        return 2;
    }
    if (options->help) {
        std::fputs(cowsim::usage().c_str(), stdout);
        return 0;
    }
    if (options->version) {
        std::printf("cowsim %s\n", PREWARMD_VERSION);
        return 0;
    }

    cowsim::Simulator simulator(options->backend);
    for (const auto& disk : options->disks)
        if (auto added = simulator.add_disk(disk); !added) {
            std::fprintf(stderr, "cowsim: %s\n", added.error().message.c_str());
            return 2;
        }
    for (const auto& disk : simulator.disks())
        std::fprintf(stderr, "cowsim: %s: %s in %s blocks%s%s, store %s\n", disk->name().c_str(),
                     prewarmd::format_size(disk->size_bytes()).c_str(),
                     prewarmd::format_size(disk->config().block_bytes).c_str(),
                     disk->config().sector_bitmap ? ", sector bitmap" : "",
                     disk->config().parent_path.empty()
                         ? ""
                         : (", parent " + disk->config().parent_path).c_str(),
                     disk->config().store_path.c_str());
    return cowsim::serve(simulator, options->mountpoint, options->threads);
}
