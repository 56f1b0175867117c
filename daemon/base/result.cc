#include "base/result.hh"

#include <cerrno>
#include <cstring>

namespace prewarmd {

Error errno_error(std::string what) {
    const int saved = errno;
    return Error{-saved, std::move(what) + ": " + std::strerror(saved)};
}

} // namespace prewarmd
