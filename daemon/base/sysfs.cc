#include "base/sysfs.hh"

#include <fcntl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "base/unique_fd.hh"

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

Result<uint64_t> sectors_written(dev_t devnum) {
    const std::string path = "/sys/dev/block/" + std::to_string(major(devnum)) + ":" +
                             std::to_string(minor(devnum)) + "/stat";
    const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd)
        return errno_error(path);
    char text[512];
    const ssize_t n = ::read(fd.get(), text, sizeof text - 1);
    if (n < 0)
        return errno_error(path);
    text[n] = 0;
    std::istringstream fields(text);
    // read I/Os, merges, sectors, ticks; write I/Os, merges, sectors
    uint64_t values[7] = {};
    for (auto& v : values)
        if (!(fields >> v))
            return Error{-EINVAL, path + ": not the kernel's stat fields"};
    return values[6];
}

} // namespace prewarmd
