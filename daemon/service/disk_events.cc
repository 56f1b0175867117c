#include "service/disk_events.hh"

namespace prewarmd {

std::string disk_event_type(std::string_view what) {
    return "org.prewarmd.disk." + std::string(what);
}

std::vector<std::string> DiskEvents::changed(const DiskView& now) {
    auto& seen = m_seen[now.identity];
    std::vector<std::string> types;
    for (const auto& [status, count] : now.job_ends) {
        const auto before = seen.job_ends.find(status);
        if (count > (before == seen.job_ends.end() ? 0 : before->second))
            types.emplace_back(to_string(status));
    }
    if (now.state == DiskState::running && seen.state != DiskState::running &&
        seen.state != DiskState::paused)
        types.emplace_back("started");
    seen = {now.state, now.job_ends};
    return types;
}

void DiskEvents::removed(const std::string& identity) {
    m_seen.erase(identity);
}

} // namespace prewarmd
