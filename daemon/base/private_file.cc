#include "base/private_file.hh"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "base/unique_fd.hh"

namespace prewarmd {

Result<std::string> read_private_file(const std::string& path, size_t max_bytes) {
    const auto bad = [&](const std::string& why) { return Error{-EINVAL, path + ": " + why}; };
    // Its directory too: whoever may replace the file chooses the secret.
    const auto slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "."
                            : slash == 0               ? "/"
                                                       : path.substr(0, slash);
    struct stat dir_st {};
    if (::stat(dir.c_str(), &dir_st) < 0)
        return bad(dir + ": " + std::strerror(errno));
    if ((dir_st.st_uid != 0 && dir_st.st_uid != ::geteuid()) ||
        ((dir_st.st_mode & 022) && !(dir_st.st_mode & S_ISVTX)))
        return bad("its directory " + dir +
                   " may be written by others than root: the file could be replaced");
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd)
        return bad(std::strerror(errno));
    struct stat st {};
    if (::fstat(fd.get(), &st) < 0 || !S_ISREG(st.st_mode))
        return bad("not a regular file");
    if (st.st_uid != ::geteuid())
        return bad("owned by uid " + std::to_string(st.st_uid) + ", not by uid " +
                   std::to_string(::geteuid()) + " (this daemon): chown it");
    if (st.st_mode & 077)
        return bad("readable by others than its owner: chmod 600 it");
    std::vector<char> buffer(max_bytes + 1);
    const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n < 0)
        return bad(std::strerror(errno));
    std::string text(buffer.data(), static_cast<size_t>(n));
    explicit_bzero(buffer.data(), buffer.size());
    if (text.size() > max_bytes) {
        forget_secret(text);
        return bad("longer than " + std::to_string(max_bytes) + " bytes");
    }
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
        text.pop_back();
    return text;
}

void forget_secret(std::string& secret) {
    explicit_bzero(secret.data(), secret.size());
    secret.clear();
}

} // namespace prewarmd
