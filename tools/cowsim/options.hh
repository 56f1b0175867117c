// cowsim's command line.
#pragma once

#include <string>
#include <vector>

#include "backend.hh"
#include "base/result.hh"
#include "cow_disk.hh"

namespace cowsim {

struct Options {
    std::string mountpoint;
    BackendConfig backend;
    std::vector<DiskConfig> disks;
    unsigned threads = 16;
    bool help = false;
    bool version = false;
};

prewarmd::Result<Options> parse_options(const std::vector<std::string>& args);
std::string usage();

} // namespace cowsim
