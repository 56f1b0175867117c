#include "safety/signatures.hh"

#include <blkid/blkid.h>
#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "base/io.hh"

namespace prewarmd {
namespace {

struct ProbeDeleter {
    void operator()(blkid_struct_probe* p) const { blkid_free_probe(p); }
};
using Probe = std::unique_ptr<blkid_struct_probe, ProbeDeleter>;

std::string value(blkid_probe probe, const char* name) {
    const char* data = nullptr;
    if (blkid_probe_lookup_value(probe, name, &data, nullptr) == 0 && data)
        return data;
    return {};
}

// Lifts O_DIRECT from a descriptor for as long as it lives.
class BufferedAccess {
public:
    explicit BufferedAccess(int fd) : m_fd(fd), m_flags(::fcntl(fd, F_GETFL)) {
        if (m_flags >= 0 && (m_flags & O_DIRECT))
            ::fcntl(fd, F_SETFL, m_flags & ~O_DIRECT);
    }
    ~BufferedAccess() {
        if (m_flags >= 0 && (m_flags & O_DIRECT))
            ::fcntl(m_fd, F_SETFL, m_flags);
    }
    BufferedAccess(const BufferedAccess&) = delete;
    BufferedAccess& operator=(const BufferedAccess&) = delete;

private:
    int m_fd;
    int m_flags;
};

Probe new_probe(int fd, uint64_t offset, uint64_t size, bool partitions) {
    Probe probe(blkid_new_probe());
    if (!probe || blkid_probe_set_device(probe.get(), fd, static_cast<blkid_loff_t>(offset),
                                         static_cast<blkid_loff_t>(size)) != 0)
        return nullptr;
    blkid_probe_enable_superblocks(probe.get(), 1);
    blkid_probe_set_superblocks_flags(probe.get(), BLKID_SUBLKS_TYPE | BLKID_SUBLKS_USAGE |
                                                       BLKID_SUBLKS_UUID | BLKID_SUBLKS_LABEL |
                                                       BLKID_SUBLKS_BADCSUM);
    blkid_probe_enable_partitions(probe.get(), partitions ? 1 : 0);
    return probe;
}

// Every superblock a probe finds, as wipefs lists them.
void list_superblocks(blkid_probe probe, const std::string& where, std::vector<Signature>& out) {
    while (blkid_do_probe(probe) == 0) {
        const auto type = value(probe, "TYPE");
        if (!type.empty())
            out.push_back(
                {type, value(probe, "USAGE"), value(probe, "UUID"), value(probe, "LABEL"), where});
    }
}

} // namespace

std::string Signature::describe() const {
    std::string text = type;
    if (usage == "partition table")
        text = "a " + type + " partition table";
    else if (usage == "filesystem")
        text += " filesystem";
    else if (usage == "raid")
        text += " (a RAID or LVM member)";
    else if (usage == "crypto")
        text += " (encrypted)";
    std::string details;
    if (!uuid.empty())
        details = "UUID " + uuid;
    if (!label.empty())
        details += (details.empty() ? "label " : ", label ") + label;
    if (!details.empty())
        text += " (" + details + ")";
    if (!where.empty())
        text += " in " + where;
    return text;
}

Result<std::vector<Signature>> probe_signatures(int fd, uint64_t size_bytes,
                                                uint32_t logical_block_bytes) {
    BufferedAccess buffered(fd);
    std::vector<Signature> found;

    auto probe = new_probe(fd, 0, 0, true);
    if (!probe)
        return Error{-ENOMEM, "cannot set up a libblkid probe"};
    const int r = blkid_do_safeprobe(probe.get());
    if (r < 0 && r != -2)
        return Error{-EIO, "libblkid could not read the disk"};
    if (r == -2) {
        // Several superblocks claim the disk: name them all.
        auto all = new_probe(fd, 0, 0, false);
        if (all)
            list_superblocks(all.get(), "", found);
    } else if (r == 0) {
        if (const auto type = value(probe.get(), "TYPE"); !type.empty())
            found.push_back({type, value(probe.get(), "USAGE"), value(probe.get(), "UUID"),
                             value(probe.get(), "LABEL"), ""});
        if (const auto table = value(probe.get(), "PTTYPE"); !table.empty()) {
            found.push_back({table, "partition table", value(probe.get(), "PTUUID"), "", ""});
            // What the partitions hold, each probed on its own.
            if (blkid_partlist list = blkid_probe_get_partitions(probe.get())) {
                const int count = blkid_partlist_numof_partitions(list);
                for (int i = 0; i < count; ++i) {
                    blkid_partition part = blkid_partlist_get_partition(list, i);
                    const auto start = static_cast<uint64_t>(blkid_partition_get_start(part)) * 512;
                    const auto length = static_cast<uint64_t>(blkid_partition_get_size(part)) * 512;
                    auto inner = new_probe(fd, start, length, false);
                    if (inner)
                        list_superblocks(
                            inner.get(),
                            "partition " + std::to_string(blkid_partition_get_partno(part)), found);
                }
            }
        }
    }

    // libblkid trusts a GPT only with its protective MBR; a disk wiped at the start
    // may still hold the backup header in its last sector.
    const bool gpt_known =
        std::any_of(found.begin(), found.end(), [](const Signature& s) { return s.type == "gpt"; });
    if (!gpt_known && size_bytes >= 2 * logical_block_bytes) {
        char sector[8];
        auto got = pread_full(fd, sector, sizeof sector, size_bytes - logical_block_bytes);
        if (got && *got == sizeof sector && std::memcmp(sector, "EFI PART", 8) == 0)
            found.push_back(
                {"gpt", "partition table", "", "", "the last sector (a backup header)"});
    }
    return found;
}

} // namespace prewarmd
