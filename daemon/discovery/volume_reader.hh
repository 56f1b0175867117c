// Which volume each Xen disk is (discovery/xenstore.hh), read off the event loop:
// xenstore may take up to a second a read, three reads a disk, and 64 disks
// attached at once would hold udev's events, and the watchdog, for minutes. One
// thread reads them in turn; each result goes back through `post` (the loop's
// dispatcher). A disk still waiting when its time is up is handed back with its
// volume unknown, unread: the scheduler judges such a disk anew where its record
// knew the volume (docs/safety.md, "Another volume in the slot").
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "discovery/disk_info.hh"

namespace prewarmd {

class VolumeReader {
public:
    using Read = std::function<std::string(const DiskInfo&)>;
    using Post = std::function<void(std::function<void()>)>;
    using Done = std::function<void(DiskInfo)>;

    // `within`: from a disk's read() to the start of its reading, at most.
    VolumeReader(Read read, Post post, std::chrono::milliseconds within);
    ~VolumeReader(); // what is still queued is dropped: the daemon is stopping
    VolumeReader(const VolumeReader&) = delete;
    VolumeReader& operator=(const VolumeReader&) = delete;

    // Returns at once; `done` gets the disk with its volume, through `post`.
    void read(DiskInfo disk, Done done);

private:
    struct Ask {
        DiskInfo disk;
        Done done;
        std::chrono::steady_clock::time_point by;
    };
    void run();

    const Read m_read;
    const Post m_post;
    const std::chrono::milliseconds m_within;
    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::deque<Ask> m_queue;
    bool m_stopping = false;
    std::thread m_thread;
};

} // namespace prewarmd
