// A block device as udev and sysfs describe it: the facts discovery, matching,
// identity and safety decide on. Filled from libudev, or from a fixture in tests.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace prewarmd {

struct DiskInfo {
    std::string name;    // kernel name: xvdb, loop3; not an identity (names are reused)
    std::string devnode; // /dev/xvdb
    std::string devpath; // /devices/vbd-51728/block/xvdb
    std::string devtype; // disk or partition
    unsigned major = 0;
    unsigned minor = 0;
    uint64_t diskseq = 0; // 0: the kernel gives none
    uint64_t size_bytes = 0;
    bool read_only = false;
    bool removable = false;
    std::map<std::string, std::string> properties; // udev's: ID_PATH, ID_SERIAL, ...
    std::map<std::string, std::string> attributes; // sysfs: wwid, serial, loop/backing_file
    // The first parent device: on Xen, the vbd on the xen bus.
    std::string parent_subsystem;
    std::string parent_driver;
    std::map<std::string, std::string> parent_attributes; // nodename, devtype, ...
    // Which volume it is, where the backend says (discovery/xenstore.hh); "" unknown.
    std::string volume;

    std::string property(const std::string& key) const;
    std::string attribute(const std::string& key) const;
    std::string parent_attribute(const std::string& key) const;
    bool is_partition() const { return devtype == "partition"; }
    std::string majmin() const { return std::to_string(major) + ":" + std::to_string(minor); }
};

} // namespace prewarmd
