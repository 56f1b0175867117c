#include "simulator.hh"

#include <cerrno>

namespace cowsim {

using prewarmd::Error;
using prewarmd::Result;

bool valid_disk_name(std::string_view name) {
    if (name.empty() || name.size() > 64 || name.front() == '.')
        return false;
    for (const char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.'))
            return false;
    return true;
}

Simulator::Simulator(const BackendConfig& backend) : m_backend(backend) {}

Result<void> Simulator::add_disk(const DiskConfig& config) {
    if (!valid_disk_name(config.name))
        return Error{-EINVAL, "invalid disk name '" + config.name +
                                  "': letters, digits, '-', '_' and '.', not first"};
    if (find(config.name))
        return Error{-EEXIST, "disk " + config.name + " is given twice"};
    auto disk = CowDisk::open(config, m_backend);
    if (!disk)
        return disk.error();
    m_disks.push_back(std::move(*disk));
    return {};
}

CowDisk* Simulator::find(std::string_view name) const {
    for (const auto& disk : m_disks)
        if (disk->name() == name)
            return disk.get();
    return nullptr;
}

Result<std::vector<CowDisk*>> Simulator::targets(const std::string& disk) const {
    std::vector<CowDisk*> out;
    if (disk == "*") {
        for (const auto& d : m_disks)
            out.push_back(d.get());
        return out;
    }
    if (auto* d = find(disk)) {
        out.push_back(d);
        return out;
    }
    return Error{-ENOENT, "no disk named '" + disk + "'"};
}

Result<void> Simulator::control(std::string_view text) {
    auto commands = parse_control(text);
    if (!commands)
        return commands.error();
    // Resolve every target first, so a command naming an unknown disk applies nothing.
    std::vector<std::vector<CowDisk*>> resolved;
    for (const auto& command : *commands) {
        const auto disk = std::visit(
            [](const auto& c) -> std::string {
                if constexpr (requires { c.disk; })
                    return c.disk;
                else
                    return "*";
            },
            command);
        auto found = targets(disk);
        if (!found)
            return found.error();
        resolved.push_back(std::move(*found));
    }
    for (size_t i = 0; i < commands->size(); ++i) {
        const auto& command = (*commands)[i];
        for (auto* disk : resolved[i]) {
            if (const auto* fault = std::get_if<FaultCommand>(&command))
                disk->faults().add(fault->rule);
            else if (std::holds_alternative<ClearCommand>(command))
                disk->faults().clear();
            else if (const auto* presence = std::get_if<PresenceCommand>(&command))
                disk->set_present(presence->present);
        }
        if (const auto* capacity = std::get_if<CapacityCommand>(&command))
            m_backend.set_capacity(capacity->bytes);
    }
    return {};
}

namespace {

// Allocated blocks as [offset, length] byte ranges, the first few thousand of them.
nlohmann::json allocated_extents(const CowDisk& disk) {
    constexpr size_t most = 4096;
    auto out = nlohmann::json::array();
    const uint64_t block = disk.config().block_bytes;
    uint64_t b = 0;
    while (b < disk.blocks_total() && out.size() < most) {
        if (!disk.is_allocated(b)) {
            ++b;
            continue;
        }
        const uint64_t first = b;
        while (b < disk.blocks_total() && disk.is_allocated(b))
            ++b;
        out.push_back({first * block, std::min(b * block, disk.size_bytes()) - first * block});
    }
    return out;
}

} // namespace

nlohmann::json Simulator::stats() const {
    const auto& config = m_backend.config();
    nlohmann::json out;
    out["backend"] = {
        {"bandwidth_bytes_per_s", config.bandwidth_bytes_per_s},
        {"concurrency", config.concurrency},
        {"capacity_bytes", m_backend.capacity_bytes()},
        {"used_bytes", m_backend.used_bytes()},
        {"alloc_latency_ns", config.alloc_latency.count()},
        {"sync_latency_ns", config.sync_latency.count()},
        {"host_allocation", config.host_allocation},
    };
    auto& disks = out["disks"] = nlohmann::json::object();
    for (const auto& disk : m_disks) {
        const auto& c = disk->counters();
        disks[disk->name()] = {
            {"size_bytes", disk->size_bytes()},
            {"block_bytes", disk->config().block_bytes},
            {"sector_bitmap", disk->config().sector_bitmap},
            {"zeroes", to_string(disk->config().zeroes)},
            {"allocations", disk->config().allocations},
            {"parent", disk->config().parent_path},
            {"present", disk->present()},
            {"blocks_total", disk->blocks_total()},
            {"blocks_allocated", c.blocks_allocated.load()},
            {"allocated_bytes", disk->allocated_bytes()},
            {"first_writes", c.first_writes.load()},
            {"backend_bytes_written", c.backend_bytes_written.load()},
            {"link_bytes_written", c.link_bytes_written.load()},
            {"backend_bytes_read", c.backend_bytes_read.load()},
            {"parent_bytes_read", c.parent_bytes_read.load()},
            {"hole_bytes_read", c.hole_bytes_read.load()},
            {"reads", c.reads.load()},
            {"writes", c.writes.load()},
            {"flushes", c.flushes.load()},
            {"bytes_read", c.bytes_read.load()},
            {"bytes_written", c.bytes_written.load()},
            {"meta_syncs", c.meta_syncs.load()},
            {"zero_bytes_dropped", c.zero_bytes_dropped.load()},
            {"blocks_unmapped", c.blocks_unmapped.load()},
            {"allocation_waits", c.allocation_waits.load()},
            {"allocations_in_flight_peak", c.allocations_in_flight_peak.load()},
            {"faults_injected", c.faults_injected.load()},
            {"fault_rules", disk->faults().size()},
            {"allocated_extents", allocated_extents(*disk)},
        };
    }
    return out;
}

} // namespace cowsim
