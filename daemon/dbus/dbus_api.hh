// org.prewarmd.Prewarmd1 on D-Bus (api/org.prewarmd.Prewarmd1.xml): the manager
// object with the commands and settings, one object per disk, and the signals.
// Everything runs on the loop's thread (see Bus), so it calls the scheduler directly.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "base/result.hh"
#include "dbus/bus.hh"
#include "scheduler/scheduler.hh"

namespace prewarmd {

inline constexpr const char* dbus_name = "org.prewarmd.Prewarmd1";
inline constexpr const char* dbus_manager_path = "/org/prewarmd/Prewarmd1";

class DbusApi {
public:
    using LogFn = std::function<void(bool warning, const std::string& line)>;

    // Publishes the objects and takes the bus name (fails if another owner has it).
    static Result<std::unique_ptr<DbusApi>> start(Bus& bus, Scheduler& scheduler,
                                                  const std::string& group, LogFn log);
    ~DbusApi();

    // The scheduler's changes (a warm_again comes with its state change) and the 1 s
    // progress tick.
    void on_changed(DiskChange change, const std::string& identity);
    void on_progress();
    // The settings or the boot changed outside D-Bus (the HTTP API, a reload, systemd).
    void on_settings_changed();
    void set_group(const std::string& group);

    static std::string disk_path(const std::string& identity);

    class Manager;
    class DiskObject;

private:
    DbusApi() = default;
    void sync_objects();

    Bus* m_bus = nullptr;
    Scheduler* m_scheduler = nullptr;
    std::unique_ptr<Manager> m_manager;
    std::map<std::string, std::unique_ptr<DiskObject>> m_disks;
};

} // namespace prewarmd
