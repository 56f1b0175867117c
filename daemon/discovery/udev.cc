#include "discovery/udev.hh"

#include <libudev.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <charconv>

namespace prewarmd {
namespace {

struct DeviceDeleter {
    void operator()(udev_device* d) const { udev_device_unref(d); }
};
using DevicePtr = std::unique_ptr<udev_device, DeviceDeleter>;
struct EnumerateDeleter {
    void operator()(udev_enumerate* e) const { udev_enumerate_unref(e); }
};

std::string text(const char* value) {
    return value ? value : "";
}

uint64_t number(const std::string& value) {
    uint64_t n = 0;
    std::from_chars(value.data(), value.data() + value.size(), n);
    return n;
}

// Attributes that identity and matching read; libudev reads them from sysfs.
constexpr const char* disk_attributes[] = {"wwid", "device/wwid", "serial", "device/serial",
                                           "loop/backing_file"};
constexpr const char* parent_attributes[] = {"nodename", "devtype", "modalias", "state"};

} // namespace

void UdevContextDeleter::operator()(udev* u) const {
    udev_unref(u);
}
void UdevMonitorDeleter::operator()(udev_monitor* m) const {
    udev_monitor_unref(m);
}

DiskInfo disk_info(udev_device* device) {
    DiskInfo d;
    d.name = text(udev_device_get_sysname(device));
    d.devnode = text(udev_device_get_devnode(device));
    d.devpath = text(udev_device_get_devpath(device));
    d.devtype = text(udev_device_get_devtype(device));
    const dev_t devnum = udev_device_get_devnum(device);
    d.major = major(devnum);
    d.minor = minor(devnum);
    for (auto* entry = udev_device_get_properties_list_entry(device); entry;
         entry = udev_list_entry_get_next(entry))
        d.properties[text(udev_list_entry_get_name(entry))] =
            text(udev_list_entry_get_value(entry));
    d.diskseq = number(d.property("DISKSEQ"));
    if (d.diskseq == 0)
        d.diskseq = number(text(udev_device_get_sysattr_value(device, "diskseq")));
    d.size_bytes = number(text(udev_device_get_sysattr_value(device, "size"))) * 512;
    d.read_only = text(udev_device_get_sysattr_value(device, "ro")) == "1";
    d.removable = text(udev_device_get_sysattr_value(device, "removable")) == "1";
    for (const auto* attribute : disk_attributes)
        if (const char* value = udev_device_get_sysattr_value(device, attribute))
            d.attributes[attribute] = value;
    // For a disk, its bus device; a partition's parent is its disk.
    if (udev_device* parent = udev_device_get_parent(device); parent && !d.is_partition()) {
        d.parent_subsystem = text(udev_device_get_subsystem(parent));
        d.parent_driver = text(udev_device_get_driver(parent));
        for (const auto* attribute : parent_attributes)
            if (const char* value = udev_device_get_sysattr_value(parent, attribute))
                d.parent_attributes[attribute] = value;
    }
    return d; // its volume: discovery/volume_reader.hh
}

Result<Udev> Udev::open() {
    Udev u;
    u.m_udev.reset(udev_new());
    if (!u.m_udev)
        return errno_error("udev_new");
    return u;
}

Result<DiskInfo> Udev::device(dev_t devnum) const {
    DevicePtr device(udev_device_new_from_devnum(m_udev.get(), 'b', devnum));
    if (!device)
        return errno_error("no block device " + std::to_string(major(devnum)) + ":" +
                           std::to_string(minor(devnum)));
    return disk_info(device.get());
}

Result<DiskInfo> Udev::device(const std::string& devnode) const {
    struct stat st {};
    if (::stat(devnode.c_str(), &st) < 0)
        return errno_error(devnode);
    if (!S_ISBLK(st.st_mode))
        return Error{-ENOTBLK, devnode + " is not a block device"};
    return device(st.st_rdev);
}

std::vector<DiskInfo> Udev::disks() const {
    std::vector<DiskInfo> disks;
    std::unique_ptr<udev_enumerate, EnumerateDeleter> e(udev_enumerate_new(m_udev.get()));
    if (!e)
        return disks;
    udev_enumerate_add_match_subsystem(e.get(), "block");
    udev_enumerate_add_match_property(e.get(), "DEVTYPE", "disk");
    udev_enumerate_scan_devices(e.get());
    for (auto* entry = udev_enumerate_get_list_entry(e.get()); entry;
         entry = udev_list_entry_get_next(entry)) {
        DevicePtr device(
            udev_device_new_from_syspath(m_udev.get(), udev_list_entry_get_name(entry)));
        if (device)
            disks.push_back(disk_info(device.get()));
    }
    return disks;
}

Result<UdevMonitor> UdevMonitor::open(const Udev& udev) {
    UdevMonitor m;
    m.m_monitor.reset(udev_monitor_new_from_netlink(udev.get(), "udev"));
    if (!m.m_monitor)
        return errno_error("udev monitor");
    if (udev_monitor_filter_add_match_subsystem_devtype(m.m_monitor.get(), "block", "disk") < 0 ||
        udev_monitor_enable_receiving(m.m_monitor.get()) < 0)
        return errno_error("udev monitor: enable");
    return m;
}

int UdevMonitor::fd() const {
    return udev_monitor_get_fd(m_monitor.get());
}

std::optional<UdevMonitor::Event> UdevMonitor::receive() {
    DevicePtr device(udev_monitor_receive_device(m_monitor.get()));
    if (!device)
        return std::nullopt;
    return Event{text(udev_device_get_action(device.get())), disk_info(device.get())};
}

} // namespace prewarmd
