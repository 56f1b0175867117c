// libudev, owned: the context, enumeration of block disks, and the monitor whose
// fd the daemon's event loop waits on. Start the monitor before enumerating, or a
// disk appearing in between is missed.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/result.hh"
#include "discovery/disk_info.hh"

struct udev;
struct udev_device;
struct udev_monitor;

namespace prewarmd {

struct UdevContextDeleter {
    void operator()(udev* u) const;
};
struct UdevMonitorDeleter {
    void operator()(udev_monitor* m) const;
};

class Udev {
public:
    static Result<Udev> open();
    // Whole disks and partitions alike; by device number (a node's st_rdev).
    Result<DiskInfo> device(dev_t devnum) const;
    // Resolves a device node (or a symlink to one).
    Result<DiskInfo> device(const std::string& devnode) const;
    // Every block disk present now.
    std::vector<DiskInfo> disks() const;
    udev* get() const { return m_udev.get(); }

private:
    std::unique_ptr<udev, UdevContextDeleter> m_udev;
};

class UdevMonitor {
public:
    struct Event {
        std::string action; // add, change, remove, ...
        DiskInfo disk;
    };
    // Events of block disks, as udev announces them once its rules have run.
    static Result<UdevMonitor> open(const Udev& udev);
    int fd() const;
    // The next event, or nullopt when none is waiting.
    std::optional<Event> receive();

private:
    std::unique_ptr<udev_monitor, UdevMonitorDeleter> m_monitor;
};

DiskInfo disk_info(udev_device* device);

} // namespace prewarmd
