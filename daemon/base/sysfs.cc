#include "base/sysfs.hh"

#include <sys/sysmacros.h>

#include <fstream>
#include <sstream>

namespace prewarmd {

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string read_first_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\n'))
        line.pop_back();
    return line;
}

std::optional<uint64_t> sectors_written(dev_t devnum) {
    std::istringstream fields(read_first_line("/sys/dev/block/" + std::to_string(major(devnum)) +
                                              ":" + std::to_string(minor(devnum)) + "/stat"));
    // read I/Os, merges, sectors, ticks; write I/Os, merges, sectors
    uint64_t values[7] = {};
    for (auto& v : values)
        if (!(fields >> v))
            return std::nullopt;
    return values[6];
}

} // namespace prewarmd
