#include "dbus/system_watch.hh"

#include "dbus/sdbus_compat.hh"

namespace prewarmd {
namespace {

constexpr const char* systemd_manager = "org.freedesktop.systemd1.Manager";
constexpr const char* logind_manager = "org.freedesktop.login1.Manager";

} // namespace

std::unique_ptr<SystemWatch> SystemWatch::start(Bus& bus, bool wait_for_boot, Hooks hooks) {
    std::unique_ptr<SystemWatch> watch(new SystemWatch);
    watch->m_hooks = std::move(hooks);
    if (wait_for_boot)
        watch->watch_boot(bus);
    watch->watch_logind(bus);
    return watch;
}

void SystemWatch::watch_boot(Bus& bus) {
    try {
        m_systemd = sdbus_compat::create_proxy(bus.connection(), "org.freedesktop.systemd1",
                                               "/org/freedesktop/systemd1");
        // Listening first, then asking: a boot that finishes in between is not missed.
        m_systemd->uponSignal("StartupFinished")
            .onInterface(systemd_manager)
            .call([this](uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t) {
                if (m_boot_finished)
                    return;
                m_boot_finished = true;
                m_hooks.log(false, "the boot has finished (systemd): auto prefill may start");
                m_hooks.boot_finished();
            });
        sdbus_compat::finish_registration(*m_systemd);
        m_systemd->callMethod("Subscribe").onInterface(systemd_manager);
        const std::string state =
            m_systemd->getProperty("SystemState").onInterface(systemd_manager).get<std::string>();
        if (state == "initializing" || state == "starting") {
            m_boot_finished = false;
            m_hooks.log(false, "waiting for the boot to finish (systemd: " + state +
                                   ") before warming anything by itself");
        }
    } catch (const sdbus::Error& e) {
        m_systemd.reset();
        m_boot_finished = true;
        m_hooks.log(true, "wait_for_boot: systemd does not answer on " + bus.description() + " (" +
                              e.getMessage() + "): the boot counts as finished");
    }
}

void SystemWatch::watch_logind(Bus& bus) {
    try {
        m_logind = sdbus_compat::create_proxy(bus.connection(), "org.freedesktop.login1",
                                              "/org/freedesktop/login1");
        m_logind->uponSignal("PrepareForShutdown")
            .onInterface(logind_manager)
            .call([this](bool start) { on_prepare(start, "the system is shutting down"); });
        m_logind->uponSignal("PrepareForSleep")
            .onInterface(logind_manager)
            .call([this](bool start) { on_prepare(start, "the system is going to sleep"); });
        sdbus_compat::finish_registration(*m_logind);
        m_logind->callMethod("Ping").onInterface("org.freedesktop.DBus.Peer");
    } catch (const sdbus::Error& e) {
        m_logind.reset();
        m_hooks.log(true, "logind does not answer on " + bus.description() + " (" + e.getMessage() +
                              "): no shutdown inhibitor; jobs checkpoint on SIGTERM only");
    }
}

void SystemWatch::on_prepare(bool start, const std::string& why) {
    if (start) {
        if (m_holding)
            return;
        m_holding = true;
        m_hooks.log(false, why + ": jobs checkpoint and close their disks");
        m_hooks.hold(why);
        if (m_inhibitor) {
            m_inhibitor.reset();
            m_hooks.log(false, "delay inhibitor given back");
        }
        return;
    }
    if (!m_holding)
        return;
    m_holding = false;
    m_hooks.log(false, "the shutdown or sleep is over: jobs go on");
    m_hooks.release();
}

void SystemWatch::want_inhibitor(bool want) {
    m_want = want && !m_holding;
    if (!m_want && m_inhibitor) {
        m_inhibitor.reset();
        m_hooks.log(false, "no job runs: delay inhibitor given back");
    }
    if (m_want && !m_inhibitor && !m_asking && !m_refused && m_logind)
        take_inhibitor();
}

void SystemWatch::take_inhibitor() {
    m_asking = true;
    try {
        m_logind->callMethodAsync("Inhibit")
            .onInterface(logind_manager)
            .withArguments(std::string("shutdown:sleep"), std::string("prewarmd"),
                           std::string("Checkpointing disk prefill jobs"), std::string("delay"))
            .uponReplyInvoke([this](sdbus_compat::ReplyError error, sdbus::UnixFd fd) {
                m_asking = false;
                if (error) {
                    m_refused = true; // asked once: no retry on every state change
                    m_hooks.log(true, "logind refused a delay inhibitor (" + error->getMessage() +
                                          "): jobs checkpoint on SIGTERM only");
                    return;
                }
                if (!m_want) // no job runs any more
                    return;
                m_inhibitor = std::move(fd);
                m_hooks.log(false, "holding a delay inhibitor for shutdown and sleep");
            });
    } catch (const sdbus::Error& e) {
        m_asking = false;
        m_refused = true;
        m_hooks.log(true, "cannot ask logind for a delay inhibitor: " + e.getMessage());
    }
}

} // namespace prewarmd
