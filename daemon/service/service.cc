#include "service/service.hh"

#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>

#include <systemd/sd-daemon.h>

#include "config/config.hh"
#include "discovery/grace.hh"
#include "discovery/identity.hh"
#include "discovery/tracker.hh"
#include "discovery/udev.hh"
#include "scheduler/disk_job_host.hh"
#include "scheduler/scheduler.hh"
#include "service/event_loop.hh"
#include "service/log.hh"
#include "state/state_dir.hh"

namespace prewarmd {
namespace {

constexpr int exit_ok = 0, exit_failure = 1, exit_config = 2, exit_other_instance = 3;

void drain(int fd) {
    uint64_t value;
    while (::read(fd, &value, sizeof value) > 0) {
    }
}

class Service {
public:
    Service(const ServiceOptions& options, Config config, StateDir state)
        : m_options(options), m_config(std::move(config)), m_state(std::move(state)),
          m_host(m_config, [](bool warning, const std::string& line) {
              warning ? log_warning(line) : log_info(line);
          }) {}

    int run();

private:
    Result<void> start();
    void on_udev();
    void grace_outcomes();
    void on_signal();
    void reload();
    void notify_status();

    ServiceOptions m_options;
    Config m_config;
    StateDir m_state;
    DiskJobHost m_host;
    std::unique_ptr<EventLoop> m_loop;
    std::optional<Udev> m_udev;
    std::optional<UdevMonitor> m_monitor;
    std::optional<AttachGrace> m_grace;
    std::optional<Scheduler> m_scheduler;
    DiskTracker m_tracker;
    UniqueFd m_signals;
    UniqueFd m_wake;
    std::vector<EventLoop::Handle> m_handles;
    std::string m_last_status;
    Clock::time_point m_next_status{};
    std::optional<std::chrono::microseconds> m_watchdog;
    Clock::time_point m_next_watchdog{};
};

Result<void> Service::start() {
    auto loop = EventLoop::create();
    if (!loop)
        return loop.error();
    m_loop = std::move(*loop);

    sigset_t signals;
    sigemptyset(&signals);
    for (const int s : {SIGTERM, SIGINT, SIGHUP})
        sigaddset(&signals, s);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    m_signals.reset(::signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC));
    m_wake.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!m_signals || !m_wake)
        return errno_error("signalfd/eventfd");

    auto udev = Udev::open();
    if (!udev)
        return udev.error();
    m_udev.emplace(std::move(*udev));
    // The monitor listens before the enumeration, so no disk slips in between.
    auto monitor = UdevMonitor::open(*m_udev);
    if (!monitor)
        return monitor.error();
    m_monitor.emplace(std::move(*monitor));
    auto grace = AttachGrace::create();
    if (!grace)
        return grace.error();
    m_grace.emplace(std::move(*grace));

    Scheduler::Hooks hooks;
    hooks.watch_grace = [this](const std::string& identity, const DiskInfo& disk) {
        const auto until = Clock::now() + m_config.attach_grace;
        if (auto watched =
                m_grace->watch(identity, disk.devnode, makedev(disk.major, disk.minor), until);
            !watched) {
            log_warning(identity + ": cannot watch it for the attach grace (" +
                        watched.error().message + "): it stays waiting");
            return;
        }
    };
    hooks.forget_grace = [this](const std::string& identity) { m_grace->forget(identity); };
    hooks.wake = [fd = m_wake.get()] {
        const uint64_t one = 1;
        [[maybe_unused]] const auto n = ::write(fd, &one, sizeof one);
    };
    hooks.log = [](bool warning, const std::string& line) {
        warning ? log_warning(line) : log_info(line);
    };
    m_scheduler.emplace(m_config, m_state, m_host, std::move(hooks));
    // Waiting for the boot to finish needs systemd's D-Bus API: until that watcher
    // exists, the boot counts as finished, and the log says so.
    if (m_config.wait_for_boot)
        log_info("wait_for_boot: nothing watches systemd's startup yet; the boot counts as "
                 "finished");
    m_scheduler->set_boot_finished(true);

    const auto add = [&](int fd, std::function<void()> fn) -> Result<void> {
        auto handle = m_loop->watch(fd, std::move(fn));
        if (!handle)
            return handle.error();
        m_handles.push_back(std::move(*handle));
        return {};
    };
    for (auto r : {add(m_monitor->fd(), [this] { on_udev(); }),
                   add(m_signals.get(), [this] { on_signal(); }),
                   add(m_wake.get(),
                       [this] {
                           drain(m_wake.get());
                           m_scheduler->reap();
                           notify_status();
                       }),
                   add(m_grace->fd(), [this] {
                       m_grace->on_readable();
                       grace_outcomes();
                   })})
        if (!r)
            return r.error();
    // Grace outcomes come from an open seen (the fd) or a period ended (the timer).
    m_handles.push_back(
        m_loop->timer([this] { return m_grace->next_deadline(); }, [this] { grace_outcomes(); }));
    // STATUS= once a second while a job runs; nothing when idle.
    m_handles.push_back(m_loop->timer(
        [this] { return m_scheduler->busy() ? std::optional(m_next_status) : std::nullopt; },
        [this] { notify_status(); }));
    uint64_t watchdog_usec = 0;
    if (sd_watchdog_enabled(0, &watchdog_usec) > 0) {
        m_watchdog = std::chrono::microseconds(watchdog_usec / 2);
        m_handles.push_back(m_loop->timer([this] { return std::optional(m_next_watchdog); },
                                          [this] {
                                              sd_notify(0, "WATCHDOG=1");
                                              m_next_watchdog = Clock::now() + *m_watchdog;
                                          }));
    }

    for (const auto& disk : m_udev->disks())
        for (const auto& update : m_tracker.on_uevent("present", disk))
            m_scheduler->on_attached(update.disk);
    return {};
}

void Service::grace_outcomes() {
    for (const auto& outcome : m_grace->take_decided(Clock::now()))
        m_scheduler->on_grace(outcome.key, outcome.in_use, outcome.why);
    notify_status();
}

void Service::on_udev() {
    while (auto event = m_monitor->receive())
        for (const auto& update : m_tracker.on_uevent(event->action, event->disk)) {
            switch (update.event) {
            case DiskTracker::Event::attached:
                m_scheduler->on_attached(update.disk);
                break;
            case DiskTracker::Event::detached:
                m_scheduler->on_detached(update.disk);
                break;
            case DiskTracker::Event::changed:
                // A new size is a new identity: the disk as it was is gone.
                log_info(disk_identity(update.disk) + " (" + update.disk.name + "): " + update.why);
                m_scheduler->on_attached(update.disk);
                break;
            }
        }
    notify_status();
}

void Service::on_signal() {
    signalfd_siginfo info{};
    while (::read(m_signals.get(), &info, sizeof info) == sizeof info) {
        if (info.ssi_signo == SIGHUP) {
            reload();
            continue;
        }
        log_info(std::string("stopping on ") + (info.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT") +
                 ": jobs checkpoint and resume at the next start");
        sd_notify(0, "STOPPING=1\nSTATUS=stopping: checkpointing jobs");
        m_scheduler->shutdown();
        m_loop->quit();
        return;
    }
}

void Service::reload() {
    sd_notify(0, "RELOADING=1");
    auto fresh = load_config(m_options.config_path, !m_options.config_given);
    if (!fresh) {
        log_error("reload: " + fresh.error().message + "; keeping the settings in force");
        sd_notify(0, "READY=1");
        return;
    }
    if (m_options.state_dir)
        fresh->state_dir = *m_options.state_dir;
    const auto plan = plan_reload(m_config, *fresh);
    std::string applied, waiting;
    for (const auto& a : plan.applied)
        applied += " " + a;
    for (const auto& w : plan.need_restart)
        waiting += " " + w;
    log_info("reload: " + (applied.empty() ? std::string("nothing changed") : "applied" + applied) +
             (waiting.empty() ? "" : "; needs a restart, kept as it was:" + waiting));
    const auto state_dir = m_config.state_dir;
    m_config = *fresh;
    m_config.state_dir = state_dir;
    set_log_level(m_config.log_level);
    m_host.apply_config(m_config);
    m_scheduler->apply_config(m_config);
    sd_notify(0, "READY=1");
    notify_status();
}

void Service::notify_status() {
    m_next_status = Clock::now() + std::chrono::seconds(1);
    const auto line = m_scheduler->status_line();
    if (line == m_last_status)
        return;
    m_last_status = line;
    sd_notifyf(0, "STATUS=%s", line.c_str());
}

int Service::run() {
    if (auto started = start(); !started) {
        log_error(started.error().message);
        return exit_failure;
    }
    m_next_watchdog = Clock::now();
    sd_notify(0, "READY=1");
    log_info("running: state in " + m_state.path() + ", " +
             std::to_string(m_scheduler->disks().size()) + " disk(s) known");
    notify_status();
    if (auto ran = m_loop->run(); !ran) {
        log_error(ran.error().message);
        return exit_failure;
    }
    log_info("stopped");
    return exit_ok;
}

} // namespace

int run_service(const ServiceOptions& options) {
    auto config = load_config(options.config_path, !options.config_given);
    if (!config) {
        setup_log("info");
        log_error(config.error().message);
        return exit_config;
    }
    if (options.state_dir)
        config->state_dir = *options.state_dir;
    setup_log(config->log_level);
    auto state = StateDir::open(config->state_dir);
    if (!state) {
        log_error(state.error().message);
        return state.error().err == -EBUSY ? exit_other_instance : exit_failure;
    }
    Service service(options, std::move(*config), std::move(*state));
    return service.run();
}

} // namespace prewarmd
