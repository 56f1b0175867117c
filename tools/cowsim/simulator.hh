// All disks of one cowsim process over their shared backend: looked up by name,
// steered by control commands, summed up in the stats document.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend.hh"
#include "base/result.hh"
#include "cow_disk.hh"
#include "faults.hh"

namespace cowsim {

class Simulator {
public:
    explicit Simulator(const BackendConfig& backend);

    prewarmd::Result<void> add_disk(const DiskConfig& config);
    // A disk by name, vanished ones included; nullptr when there is none.
    CowDisk* find(std::string_view name) const;
    const std::vector<std::unique_ptr<CowDisk>>& disks() const { return m_disks; }

    // Applies the whole text of a control-file write, or none of it.
    prewarmd::Result<void> control(std::string_view text);
    nlohmann::json stats() const;
    Backend& backend() { return m_backend; }

private:
    prewarmd::Result<std::vector<CowDisk*>> targets(const std::string& disk) const;

    Backend m_backend;
    std::vector<std::unique_ptr<CowDisk>> m_disks;
};

// A disk name is one path component that cannot clash with the control files.
bool valid_disk_name(std::string_view name);

} // namespace cowsim
