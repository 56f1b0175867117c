#include "io/open_watch.hh"

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>

namespace prewarmd {

Result<OpenWatch> OpenWatch::watch(const std::string& devnode) {
    OpenWatch w;
    w.m_inotify.reset(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    if (!w.m_inotify)
        return errno_error("inotify");
    if (::inotify_add_watch(w.m_inotify.get(), devnode.c_str(), IN_OPEN | IN_CLOSE_WRITE) < 0)
        return errno_error("watch " + devnode);
    return w;
}

bool OpenWatch::seen() {
    alignas(inotify_event) char buffer[4096];
    bool any = false;
    for (;;) {
        const ssize_t n = ::read(m_inotify.get(), buffer, sizeof buffer);
        if (n > 0) {
            any = true;
            continue;
        }
        // Drained (EAGAIN), or the events cannot be read: then one may have come.
        return any || (n < 0 && errno != EAGAIN);
    }
}

} // namespace prewarmd
