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

Result<std::string> read_file(const std::string& path) {
    const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd)
        return errno_error(path);
    std::string text;
    char buffer[65536];
    for (;;) {
        const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno_error(path);
        }
        if (n == 0)
            return text;
        text.append(buffer, static_cast<size_t>(n));
    }
}

std::string read_first_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\n'))
        line.pop_back();
    return line;
}

namespace {

// Field `index` (from 0) of /sys/dev/block/MAJ:MIN/stat; `what` names it in errors.
Result<uint64_t> stat_field(dev_t devnum, size_t index, const char* what) {
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
    uint64_t value = 0;
    for (size_t i = 0; i <= index; ++i)
        if (!(fields >> value))
            return Error{i < 7 ? -EINVAL : -ENODATA,
                         path + (i < 7 ? ": not the kernel's stat fields"
                                       : std::string(": the kernel counts no ") + what + " here")};
    return value;
}

} // namespace

Result<uint64_t> sectors_written(dev_t devnum) {
    // read I/Os, merges, sectors, ticks; write I/Os, merges, sectors
    return stat_field(devnum, 6, "writes");
}

Result<uint64_t> sectors_discarded(dev_t devnum) {
    // ... in flight, io ticks, time in queue; discard I/Os, merges, sectors (Linux 4.18)
    return stat_field(devnum, 13, "discards");
}

} // namespace prewarmd
