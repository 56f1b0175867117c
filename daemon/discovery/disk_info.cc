#include "discovery/disk_info.hh"

namespace prewarmd {
namespace {

std::string lookup(const std::map<std::string, std::string>& map, const std::string& key) {
    const auto it = map.find(key);
    return it == map.end() ? std::string() : it->second;
}

} // namespace

std::string DiskInfo::property(const std::string& key) const {
    return lookup(properties, key);
}
std::string DiskInfo::attribute(const std::string& key) const {
    return lookup(attributes, key);
}
std::string DiskInfo::parent_attribute(const std::string& key) const {
    return lookup(parent_attributes, key);
}

} // namespace prewarmd
