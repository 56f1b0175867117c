// The daemon's manners toward the rest of the system, over D-Bus: systemd says when
// the boot has finished (auto prefill waits for it, so cloud-init or an admin can
// format a new disk at boot without meeting our exclusive open); logind gets a
// delay inhibitor while a job runs, and says when a shutdown or a sleep is coming,
// so jobs checkpoint and close their disks first.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <sdbus-c++/IProxy.h>
#include <sdbus-c++/Types.h>

#include "dbus/bus.hh"

namespace prewarmd {

class SystemWatch {
public:
    struct Hooks {
        std::function<void()> boot_finished;
        // A shutdown or a sleep is coming (`why`): stop the jobs, checkpointed. Returns
        // once they have; the inhibitor is given back right after.
        std::function<void(const std::string& why)> hold;
        // It was called off, or the system woke up.
        std::function<void()> release;
        std::function<void(bool warning, const std::string& line)> log;
    };

    // Asks systemd whether the boot has finished (when `wait_for_boot`), and listens
    // to logind. What is missing (no systemd, no logind: a container) is a warning.
    static std::unique_ptr<SystemWatch> start(Bus& bus, bool wait_for_boot, Hooks hooks);

    bool boot_finished() const { return m_boot_finished; }
    // Holds logind's delay inhibitor while `want` (a job runs), not otherwise.
    void want_inhibitor(bool want);

private:
    SystemWatch() = default;
    void watch_boot(Bus& bus);
    void watch_logind(Bus& bus);
    void on_prepare(bool start, const std::string& why);
    void take_inhibitor();

    Hooks m_hooks;
    std::unique_ptr<sdbus::IProxy> m_systemd;
    std::unique_ptr<sdbus::IProxy> m_logind;
    bool m_boot_finished = true;
    bool m_want = false;
    bool m_asking = false;
    bool m_refused = false;
    bool m_holding = false; // between PrepareFor*(true) and (false)
    std::optional<sdbus::UnixFd> m_inhibitor;
};

} // namespace prewarmd
