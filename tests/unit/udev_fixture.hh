// Reads a udev fixture (tests/fixtures/udev/README.md) into a DiskInfo.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include "discovery/disk_info.hh"

inline prewarmd::DiskInfo load_udev_fixture(const std::string& name) {
    std::ifstream in(std::string(PREWARMD_SOURCE_DIR) + "/tests/fixtures/udev/" + name);
    if (!in)
        throw std::runtime_error("no fixture " + name);
    prewarmd::DiskInfo d;
    enum { none, device, parent, beyond } section = none;
    std::string line;
    // ATTR{key}=="value" -> key, value
    const auto key_value = [](const std::string& l, size_t open) {
        const auto close = l.find('}', open);
        const auto quote = l.find("==\"", close);
        return std::pair{l.substr(open + 1, close - open - 1),
                         l.substr(quote + 3, l.rfind('"') - quote - 3)};
    };
    const auto quoted = [](const std::string& l) {
        const auto q = l.find("==\"");
        return l.substr(q + 3, l.rfind('"') - q - 3);
    };
    while (std::getline(in, line)) {
        if (line.rfind("E: ", 0) == 0) {
            const auto eq = line.find('=');
            const auto key = line.substr(3, eq - 3), value = line.substr(eq + 1);
            d.properties[key] = value;
            if (key == "DEVPATH")
                d.devpath = value;
            else if (key == "DEVNAME")
                d.devnode = value;
            else if (key == "DEVTYPE")
                d.devtype = value;
            else if (key == "MAJOR")
                d.major = static_cast<unsigned>(std::stoul(value));
            else if (key == "MINOR")
                d.minor = static_cast<unsigned>(std::stoul(value));
            else if (key == "DISKSEQ")
                d.diskseq = std::stoull(value);
        } else if (line.rfind("N: ", 0) == 0) {
            d.name = line.substr(3);
        } else if (line.find("looking at device") != std::string::npos) {
            section = device;
        } else if (line.find("looking at parent device") != std::string::npos) {
            section = section == device ? parent : beyond;
        } else if (section == device && line.find("ATTR{") != std::string::npos) {
            const auto [key, value] = key_value(line, line.find('{'));
            if (key == "size")
                d.size_bytes = std::stoull(value) * 512;
            else if (key == "ro")
                d.read_only = value == "1";
            else if (key == "removable")
                d.removable = value == "1";
            else
                d.attributes[key] = value;
        } else if (section == parent && line.find("SUBSYSTEMS==") != std::string::npos) {
            d.parent_subsystem = quoted(line);
        } else if (section == parent && line.find("DRIVERS==") != std::string::npos) {
            d.parent_driver = quoted(line);
        } else if (section == parent && line.find("ATTRS{") != std::string::npos) {
            const auto [key, value] = key_value(line, line.find('{'));
            d.parent_attributes[key] = value;
        }
    }
    return d;
}
