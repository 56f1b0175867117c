#include "base/atomic_file.hh"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "base/io.hh"
#include "base/unique_fd.hh"

namespace prewarmd {

Result<void> write_file_atomically(const std::string& path, std::string_view content,
                                   unsigned mode) {
    const auto dir = std::filesystem::path(path).parent_path();
    std::string temp = path + ".XXXXXX";
    UniqueFd fd(::mkostemp(temp.data(), O_CLOEXEC));
    if (!fd)
        return errno_error("create " + temp);
    const auto fail = [&](Error error) {
        ::unlink(temp.c_str());
        return error;
    };
    if (::fchmod(fd.get(), mode) < 0)
        return fail(errno_error("chmod " + temp));
    if (auto written = pwrite_full(fd.get(), content.data(), content.size(), 0); !written)
        return fail(Error{written.error().err, temp + ": " + written.error().message});
    if (::fsync(fd.get()) < 0)
        return fail(errno_error("fsync " + temp));
    fd.reset();
    if (::rename(temp.c_str(), path.c_str()) < 0)
        return fail(errno_error("rename " + temp + " to " + path));
    UniqueFd dir_fd(::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir_fd || ::fsync(dir_fd.get()) < 0)
        return errno_error("fsync directory of " + path);
    return {};
}

} // namespace prewarmd
