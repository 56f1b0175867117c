// What prewarmctl prints: the status table, one disk in detail, states in colour
// (on a terminal, and never with NO_COLOR or --no-color).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace prewarmd::ctl {

struct Style {
    bool color = false;
};

// DISK SIZE STATE PROGRESS RATE ETA ID, a line per disk of GET /v1/disks's list.
std::string status_table(const nlohmann::json& disks, const Style& style);
// One disk (GET /v1/disks/ID), a field a line.
std::string disk_details(const nlohmann::json& disk, const Style& style);
// A disk's share done, 0 to 1.
double progress_of(const nlohmann::json& disk);

} // namespace prewarmd::ctl
