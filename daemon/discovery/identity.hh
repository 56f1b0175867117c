// A disk's stable, URL-safe id: what it is, not what the kernel named it. The same
// disk attached again under another name keeps its id; another disk under the same
// name gets another.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "discovery/disk_info.hh"

namespace prewarmd {

// The Xen virtual device number (51728 for xvdb), from the vbd-<vdev> parent or
// its nodename device/vbd/<vdev>; nullopt for other disks.
std::optional<uint64_t> xen_vdev(const DiskInfo& disk);

// xen-51728-<size>; else wwn-, serial- or path- (udev's ID_PATH) with the size; a
// loop device's backing file; as a last resort the device path, which survives a
// reboot on the same bus but not a move.
std::string disk_identity(const DiskInfo& disk);
std::string file_identity(const std::string& real_path, uint64_t size_bytes);

// Letters, digits, '.', '_' and '-' only.
std::string url_safe(const std::string& text);

} // namespace prewarmd
