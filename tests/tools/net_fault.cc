// LD_PRELOAD=libnet_fault.so: faults of the network calls the API makes.
// - The next accept() or accept4() fails with ENOBUFS once the file
//   PREWARMD_ACCEPT_FAULT names exists (it is removed then), as on a host out of
//   buffers. What cpp-httplib does then (it closes the listening socket) is what
//   tests/e2e/api_accept_fault.sh checks the daemon survives.
// - With PREWARMD_SOCK_DIAG_FAULT set, a NETLINK_SOCK_DIAG socket cannot be made
//   (EACCES), as under a seccomp filter: tests/e2e/api_streams.sh.
#include <dlfcn.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace {

bool fault_now() {
    const char* path = std::getenv("PREWARMD_ACCEPT_FAULT");
    return path && ::unlink(path) == 0;
}

} // namespace

extern "C" int accept(int fd, sockaddr* address, socklen_t* length) {
    if (fault_now()) {
        errno = ENOBUFS;
        return -1;
    }
    using Accept = int (*)(int, sockaddr*, socklen_t*);
    static const auto real = reinterpret_cast<Accept>(::dlsym(RTLD_NEXT, "accept"));
    return real(fd, address, length);
}

extern "C" int accept4(int fd, sockaddr* address, socklen_t* length, int flags) {
    if (fault_now()) {
        errno = ENOBUFS;
        return -1;
    }
    using Accept4 = int (*)(int, sockaddr*, socklen_t*, int);
    static const auto real = reinterpret_cast<Accept4>(::dlsym(RTLD_NEXT, "accept4"));
    return real(fd, address, length, flags);
}

extern "C" int socket(int domain, int type, int protocol) {
    if (domain == AF_NETLINK && protocol == NETLINK_SOCK_DIAG &&
        std::getenv("PREWARMD_SOCK_DIAG_FAULT")) {
        errno = EACCES;
        return -1;
    }
    using Socket = int (*)(int, int, int);
    static const auto real = reinterpret_cast<Socket>(::dlsym(RTLD_NEXT, "socket"));
    return real(domain, type, protocol);
}
