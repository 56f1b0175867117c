#include "discovery/identity.hh"

#include <cctype>
#include <charconv>

namespace prewarmd {
namespace {

std::optional<uint64_t> number_after(const std::string& text, const std::string& prefix) {
    const auto at = text.find(prefix);
    if (at == std::string::npos)
        return std::nullopt;
    const char* begin = text.data() + at + prefix.size();
    const char* end = text.data() + text.size();
    uint64_t value = 0;
    const auto [stop, ec] = std::from_chars(begin, end, value);
    if (ec != std::errc{} || stop == begin || (stop != end && *stop != '/'))
        return std::nullopt;
    return value;
}

} // namespace

std::string url_safe(const std::string& text) {
    std::string out;
    for (const char c : text)
        out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')
                   ? c
                   : '_';
    return out;
}

std::optional<uint64_t> xen_vdev(const DiskInfo& disk) {
    if (auto vdev = number_after(disk.devpath, "/devices/vbd-"))
        return vdev;
    if (disk.parent_subsystem == "xen")
        return number_after(disk.parent_attribute("nodename"), "device/vbd/");
    return std::nullopt;
}

std::string disk_identity(const DiskInfo& disk) {
    std::string size = "-" + std::to_string(disk.size_bytes);
    if (disk.is_partition())
        size +=
            "-part" + url_safe(disk.property("PARTN").empty() ? disk.name : disk.property("PARTN"));
    if (const auto vdev = xen_vdev(disk))
        return "xen-" + std::to_string(*vdev) + size;
    for (const auto& wwn : {disk.attribute("wwid"), disk.attribute("device/wwid"),
                            disk.property("ID_WWN_WITH_EXTENSION"), disk.property("ID_WWN")})
        if (!wwn.empty())
            return "wwn-" + url_safe(wwn) + size;
    for (const auto& serial :
         {disk.attribute("serial"), disk.attribute("device/serial"), disk.property("ID_SERIAL")})
        if (!serial.empty())
            return "serial-" + url_safe(serial) + size;
    if (const auto path = disk.property("ID_PATH"); !path.empty())
        return "path-" + url_safe(path) + size;
    if (const auto backing = disk.attribute("loop/backing_file"); !backing.empty())
        return "loop-" + url_safe(backing) + size;
    return "devpath-" + url_safe(disk.devpath) + size;
}

std::string file_identity(const std::string& real_path, uint64_t size_bytes) {
    return "file-" + url_safe(real_path) + "-" + std::to_string(size_bytes);
}

} // namespace prewarmd
