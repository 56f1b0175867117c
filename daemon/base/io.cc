#include "base/io.hh"

#include <unistd.h>

#include <cerrno>

namespace prewarmd {

Result<size_t> pread_full(int fd, void* buf, size_t len, uint64_t offset) {
    auto* p = static_cast<char*>(buf);
    size_t done = 0;
    while (done < len) {
        const ssize_t n = ::pread(fd, p + done, len - done, static_cast<off_t>(offset + done));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno_error("read at offset " + std::to_string(offset + done));
        }
        if (n == 0)
            break;
        done += static_cast<size_t>(n);
    }
    return done;
}

Result<void> pwrite_full(int fd, const void* buf, size_t len, uint64_t offset) {
    const auto* p = static_cast<const char*>(buf);
    size_t done = 0;
    while (done < len) {
        const ssize_t n = ::pwrite(fd, p + done, len - done, static_cast<off_t>(offset + done));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno_error("write at offset " + std::to_string(offset + done));
        }
        if (n == 0)
            return Error{-EIO,
                         "write at offset " + std::to_string(offset + done) + " made no progress"};
        done += static_cast<size_t>(n);
    }
    return {};
}

} // namespace prewarmd
