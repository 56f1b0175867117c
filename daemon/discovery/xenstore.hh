// Which volume a Xen disk is, by the backend's own account in xenstore: the disk's
// identity (vdev and size) says only which slot it is in, and a new volume of the
// same size in the same slot would otherwise take up the old one's job and
// checkpoint (docs/safety.md, "Another volume in the slot").
#pragma once

#include <optional>
#include <string>

#include "discovery/disk_info.hh"

namespace prewarmd {

// xenstore's value at `path` (relative to this domain's home, or absolute), read
// through /dev/xen/xenbus within a second; nullopt when there is none, or no
// xenstore to ask.
std::optional<std::string> xenstore_read(const std::string& path);

// For a disk on the xen bus: "params=P" (the image or device the toolstack
// attached: a file for xl, /dev/sm/backend/SR/VDI for XAPI), and " vdi-uuid=U"
// where XAPI writes sm-data/vdi-uuid; from the backend that the frontend's
// `backend` names. "" for any other disk, or where xenstore cannot be read.
std::string xen_volume(const DiskInfo& disk);
// Whether xen_volume asks xenstore for this disk: a disk on the xen bus, a vbd.
bool names_xen_volume(const DiskInfo& disk);

} // namespace prewarmd
