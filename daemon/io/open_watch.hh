// Opens of a device node by others while a job writes it: inotify IN_OPEN, which
// the kernel raises before the opener's open() returns, and IN_CLOSE_WRITE. Set up
// after the job's own open, so what it sees is someone else (or a second open of
// ours: the job makes none).
#pragma once

#include <string>

#include "base/result.hh"
#include "base/unique_fd.hh"

namespace prewarmd {

class OpenWatch {
public:
    static Result<OpenWatch> watch(const std::string& devnode);
    // Readable when something was seen: a job's wake-up watches it.
    int fd() const { return m_inotify.get(); }
    // Whether an open (or a close after writing) was seen since the last call, or
    // may have been: the events could not be read, or overflowed the queue (the
    // kernel then queues IN_Q_OVERFLOW, itself an event).
    bool seen();

private:
    UniqueFd m_inotify;
};

} // namespace prewarmd
