#include "service/service.hh"

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include <systemd/sd-daemon.h>

#include "api/events.hh"
#include "api/router.hh"
#include "api/server.hh"
#include "base/dispatcher.hh"
#include "base/private_file.hh"
#include "base/event_loop.hh"
#include "base/json_text.hh"
#include "config/config.hh"
#include "dbus/bus.hh"
#include "dbus/dbus_api.hh"
#include "dbus/system_watch.hh"
#include "discovery/identity.hh"
#include "discovery/tracker.hh"
#include "discovery/udev.hh"
#include "discovery/volume_reader.hh"
#include "discovery/xenstore.hh"
#include "events/webhooks.hh"
#include "safety/filesystem.hh"
#include "safety/grace.hh"
#include "scheduler/adaptive.hh"
#include "scheduler/scheduler.hh"
#include "service/disk_events.hh"
#include "service/disk_job_host.hh"
#include "service/log.hh"
#include "service/loop_backend.hh"
#include "state/state_dir.hh"

namespace prewarmd {
namespace {

constexpr int exit_ok = 0, exit_failure = 1, exit_config = 2, exit_other_instance = 3;
// A Xen disk's volume is read within this of its event (3 s more at most for the
// reads), or the disk goes on with it unknown.
constexpr auto volume_read_within = std::chrono::seconds(5);

void drain(int fd) {
    uint64_t value;
    while (::read(fd, &value, sizeof value) > 0) {
    }
}

// Keeps a piece just made in its slot (an optional, a unique_ptr), or says why it
// could not be made.
template <typename Slot, typename T>
Result<void> keep(Slot& slot, Result<T> made) {
    if (!made)
        return made.error();
    slot = std::move(*made);
    return {};
}

std::string read_text_file(const char* path) {
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
}

// The webhooks as the file names them, with the key read from secret_file.
Result<WebhookSettings> webhook_settings(const Config& config) {
    WebhookSettings settings;
    settings.urls = config.events_webhooks;
    settings.ca_file = config.events_ca_file;
    settings.outbox_max = config.events_outbox_max;
    if (!settings.ca_file.empty() && ::access(settings.ca_file.c_str(), R_OK) < 0)
        return errno_error("[events] ca_file " + settings.ca_file);
    if (config.events_secret_file.empty())
        return settings;
    auto secret = read_private_file(config.events_secret_file, 4096);
    if (!secret)
        return Error{-EINVAL, "[events] secret_file " + secret.error().message};
    auto key = webhook_key(*secret);
    forget_secret(*secret);
    if (!key)
        return Error{-EINVAL, "[events] secret_file " + config.events_secret_file + ": " +
                                  key.error().message};
    settings.key = std::move(*key);
    return settings;
}

// Who the events come from: this machine's id (machine-id(5)), else its host name.
std::string machine_name() {
    auto id = read_text_file("/etc/machine-id");
    while (!id.empty() && (id.back() == '\n' || id.back() == ' '))
        id.pop_back();
    if (!id.empty())
        return id;
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    return host;
}


// The daemon's pieces and how they are wired: it owns the configuration (the
// scheduler refers to it), and does nothing itself but pass events
// from one piece to another.
class Service {
public:
    Service(const ServiceOptions& options, Config config, StateDir state)
        : m_options(options), m_config(std::move(config)), m_state(std::move(state)),
          m_host(log_line) {}

    ~Service();
    int run();

private:
    Result<void> start();
    Result<void> start_loop();
    Result<void> start_signals();
    Result<void> start_udev();
    Result<void> start_grace();
    Result<void> start_webhooks();
    Result<void> start_scheduler();
    Result<void> start_dbus();
    Result<void> start_sources();
    Result<void> enumerate();
    Result<void> start_api();

    void settings_changed();
    void attach(const DiskInfo& disk, std::function<void()> then = {});
    void on_udev();
    void on_mounts();
    void grace_outcomes();
    void on_signal();
    void reload();
    void every_second();
    void notify_status();
    void publish(DiskChange change, const std::string& identity);
    void post_event(std::string_view what, const std::string& identity, std::string data_json);
    void publish_progress();
    void adapt();

    ServiceOptions m_options;
    Config m_config; // the one copy: the scheduler refers to it
    StateDir m_state;
    DiskJobHost m_host;
    std::unique_ptr<EventLoop> m_loop;
    std::optional<Udev> m_udev;
    std::optional<UdevMonitor> m_monitor;
    std::optional<AttachGrace> m_grace;
    std::unique_ptr<Webhooks> m_webhooks; // before the scheduler: it posts till its end
    DiskEvents m_disk_events;
    std::string m_machine = machine_name();
    std::optional<Scheduler> m_scheduler;
    EventBus m_events;
    std::atomic<bool> m_ready{false};
    std::unique_ptr<Dispatcher> m_dispatcher;
    std::optional<LoopBackend> m_backend;
    std::optional<ApiRouter> m_router;
    std::unique_ptr<ApiServer> m_api;
    std::unique_ptr<Bus> m_bus;
    std::unique_ptr<SystemWatch> m_system;
    std::unique_ptr<DbusApi> m_dbus;
    DiskTracker m_tracker;
    std::optional<VolumeReader> m_volumes;
    // Per device path, counted at each attach and detach: a volume read for an
    // attach that another event has followed meanwhile is dropped.
    std::map<std::string, uint64_t> m_attaches;
    UniqueFd m_signals;
    UniqueFd m_wake;
    UniqueFd m_mounts; // the system's mount table: readable (EPOLLPRI) when it changed
    std::vector<EventLoop::Handle> m_handles;
    std::string m_last_status;
    Clock::time_point m_next_second{};
    AdaptiveMode m_adaptive;
};

// Start-up, in this order: each step named, so a failure says where.
Result<void> Service::start() {
    struct Step {
        const char* name;
        Result<void> (Service::*run)();
    };
    static constexpr Step steps[] = {
        {"the event loop", &Service::start_loop},       {"signals", &Service::start_signals},
        {"the udev monitor", &Service::start_udev},     {"the attach grace", &Service::start_grace},
        {"the webhooks", &Service::start_webhooks},     {"the scheduler", &Service::start_scheduler},
        {"D-Bus", &Service::start_dbus},
        {"the event sources", &Service::start_sources}, {"the disks present", &Service::enumerate},
        {"the HTTP API", &Service::start_api},
    };
    for (const auto& step : steps)
        if (auto done = (this->*step.run)(); !done)
            return Error{done.error().err,
                         std::string("starting ") + step.name + ": " + done.error().message};
    return {};
}

Result<void> Service::start_loop() {
    if (auto loop = keep(m_loop, EventLoop::create()); !loop)
        return loop;
    return keep(m_dispatcher, Dispatcher::create(*m_loop));
}

Result<void> Service::start_signals() {
    sigset_t signals;
    sigemptyset(&signals);
    for (const int s : {SIGTERM, SIGINT, SIGHUP})
        sigaddset(&signals, s);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    m_signals.reset(::signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC));
    m_wake.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!m_signals || !m_wake)
        return errno_error("signalfd/eventfd");
    return {};
}

// The monitor listens before the enumeration, so no disk slips in between.
Result<void> Service::start_udev() {
    if (auto udev = keep(m_udev, Udev::open()); !udev)
        return udev;
    m_volumes.emplace(
        xen_volume, [this](std::function<void()> work) { m_dispatcher->post(std::move(work)); },
        volume_read_within);
    return keep(m_monitor, UdevMonitor::open(*m_udev));
}

Result<void> Service::start_grace() {
    return keep(m_grace, AttachGrace::create());
}

Result<void> Service::start_webhooks() {
    auto settings = webhook_settings(m_config);
    if (!settings)
        return settings.error();
    return keep(m_webhooks, Webhooks::start(m_state.path() + "/outbox", std::move(*settings),
                                            log_line));
}

Result<void> Service::start_scheduler() {
    Scheduler::Hooks hooks;
    hooks.watch_grace = [this](const std::string& identity, const DiskInfo& disk) {
        const auto until = Clock::now() + m_config.attach_grace;
        if (auto watched =
                m_grace->watch(identity, disk.devnode, makedev(disk.major, disk.minor), until);
            !watched)
            log_warning(identity + ": cannot watch it for the attach grace (" +
                        watched.error().message + "): it stays waiting");
    };
    hooks.watch_quiet = [this](const std::string& identity, const DiskInfo& disk) {
        if (auto watched = m_grace->watch_until_quiet(
                identity, disk.devnode, makedev(disk.major, disk.minor), m_config.attach_grace);
            !watched)
            log_warning(identity + ": cannot watch it until it is quiet (" +
                        watched.error().message + "): it stays waiting");
    };
    hooks.forget_grace = [this](const std::string& identity) { m_grace->forget(identity); };
    hooks.wake = [fd = m_wake.get()] {
        const uint64_t one = 1;
        [[maybe_unused]] const auto n = ::write(fd, &one, sizeof one);
    };
    hooks.log = log_line;
    hooks.changed = [this](DiskChange change, const std::string& identity) {
        publish(change, identity);
    };
    m_scheduler.emplace(m_config, m_state, m_host, std::move(hooks));
    return {};
}

// Before the enumeration: the disks present at start wait for the boot too. A bus
// that is not there is no error: no D-Bus API, no boot wait, no inhibitor.
Result<void> Service::start_dbus() {
    if (!m_config.dbus_enabled) {
        if (m_config.wait_for_boot)
            log_info("wait_for_boot: D-Bus is off ([dbus] enabled = false): the boot counts as "
                     "finished");
        return {};
    }
    auto bus = Bus::open(m_config.dbus_address, *m_loop, [](const std::string& why) {
        log_warning("D-Bus connection lost (" + why +
                    "): no D-Bus API and no shutdown inhibitor until a restart; the rest goes on");
    });
    if (!bus) {
        log_warning("D-Bus: " + bus.error().message +
                    ": no D-Bus API, no boot wait, no shutdown inhibitor; the rest works");
        return {};
    }
    m_bus = std::move(*bus);
    SystemWatch::Hooks hooks;
    hooks.boot_finished = [this] {
        m_scheduler->set_boot_finished(true);
        settings_changed();
        notify_status();
    };
    hooks.hold = [this](const std::string& why) {
        m_scheduler->hold(why);
        notify_status();
    };
    hooks.release = [this] {
        m_scheduler->release_hold();
        m_system->want_inhibitor(m_scheduler->busy());
        notify_status();
    };
    hooks.log = log_line;
    m_system = SystemWatch::start(*m_bus, m_config.wait_for_boot, std::move(hooks));
    m_scheduler->set_boot_finished(m_system->boot_finished());
    auto api = DbusApi::start(*m_bus, *m_scheduler, m_config.dbus_group, log_line);
    if (!api) {
        log_warning(api.error().message + ": no D-Bus API; the rest works");
        return {};
    }
    m_dbus = std::move(*api);
    log_info(std::string("dbus: ") + dbus_name + " on " + m_bus->description());
    return {};
}

Result<void> Service::start_sources() {
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
    // Filesystems mounted or unmounted (the system's table, not this namespace's
    // copy): a formatted disk is warmed through its filesystem once mounted.
    m_mounts.reset(::open(system_mountinfo_path().c_str(), O_RDONLY | O_CLOEXEC));
    if (!m_mounts)
        return errno_error(system_mountinfo_path());
    if (auto handle = m_loop->watch(
            m_mounts.get(), [] { return uint32_t{EPOLLPRI}; }, [this] { on_mounts(); });
        !handle)
        return handle.error();
    else
        m_handles.push_back(std::move(*handle));
    // Grace outcomes come from an open seen (the fd) or a period ended (the timer).
    m_handles.push_back(
        m_loop->timer([this] { return m_grace->next_deadline(); }, [this] { grace_outcomes(); }));
    // Records the state directory had no room for, tried again.
    m_handles.push_back(m_loop->timer([this] { return m_scheduler->next_save_retry(); },
                                      [this] { m_scheduler->retry_saves(); }));
    // Warm disks, watched for discards that would make them cold again.
    m_handles.push_back(m_loop->timer([this] { return m_scheduler->next_discard_check(); },
                                      [this] { m_scheduler->check_discards(); }));
    // Once a second while a job runs (STATUS=, progress events, adaptive mode);
    // nothing when idle. Its own clock: other events do not put it off.
    m_handles.push_back(m_loop->timer(
        [this] { return m_scheduler->busy() ? std::optional(m_next_second) : std::nullopt; },
        [this] { every_second(); }));
    uint64_t watchdog_usec = 0;
    if (sd_watchdog_enabled(0, &watchdog_usec) > 0) {
        const auto half = std::chrono::microseconds(watchdog_usec / 2);
        auto next = std::make_shared<Clock::time_point>(Clock::now());
        m_handles.push_back(m_loop->timer([next] { return std::optional(*next); },
                                          [next, half] {
                                              sd_notify(0, "WATCHDOG=1");
                                              *next = Clock::now() + half;
                                          }));
    }
    return {};
}

// The table is read to its end: that is what re-arms the kernel's change signal.
void Service::on_mounts() {
    char buffer[65536];
    ::lseek(m_mounts.get(), 0, SEEK_SET);
    while (::read(m_mounts.get(), buffer, sizeof buffer) > 0) {
    }
    m_scheduler->mounts_changed();
    notify_status();
}

// Ready once every disk present at the start is known, its volume read or given up.
Result<void> Service::enumerate() {
    auto unknown = std::make_shared<size_t>(1);
    auto known = [this, unknown] {
        if (--*unknown == 0)
            m_ready = true;
    };
    for (const auto& disk : m_udev->disks())
        for (const auto& update : m_tracker.on_uevent("present", disk)) {
            ++*unknown;
            attach(update.disk, known);
        }
    known();
    return {};
}

Result<void> Service::start_api() {
    m_backend.emplace(
        *m_dispatcher, *m_scheduler, m_ready, [this] { settings_changed(); }, *m_webhooks);
    m_router.emplace(*m_backend);
    return keep(m_api, ApiServer::start(m_config, *m_router, m_events, log_line));
}

void Service::settings_changed() {
    if (m_dbus)
        m_dbus->on_settings_changed();
}

void Service::publish(DiskChange change, const std::string& identity) {
    const auto disk = m_scheduler->disk(identity);
    if (change == DiskChange::warm_again || change == DiskChange::late) {
        // warm_again: its state change follows; late: the state stays running.
        if (disk)
            post_event(change == DiskChange::late ? "late" : "warm_again", identity,
                       disk_json(*disk));
        return;
    }
    if (m_dbus)
        m_dbus->on_changed(change, identity);
    if (m_system)
        m_system->want_inhibitor(m_scheduler->busy());
    if (change == DiskChange::removed) {
        m_disk_events.removed(identity);
        m_events.publish("disk_removed", json_text(nlohmann::json({{"id", identity}})));
        return;
    }
    if (!disk)
        return;
    const auto json = disk_json(*disk);
    m_events.publish(change == DiskChange::added ? "disk_added" : "state_changed", json);
    for (const auto& type : m_disk_events.changed(*disk))
        post_event(type, identity, json);
}

// To the webhooks: `what` is the last word of the event's type (docs/events.md),
// `data_json` the disk as the API shows it.
void Service::post_event(std::string_view what, const std::string& identity,
                         std::string data_json) {
    auto id = new_event_id();
    if (!id) {
        log_warning(identity + ": no " + std::string(what) + " event for the webhooks: " +
                    id.error().message);
        return;
    }
    CloudEvent event;
    event.id = std::move(*id);
    event.type = disk_event_type(what);
    event.source = "prewarmd://" + m_machine + "/disks/" + identity;
    event.subject = identity;
    event.time_unix_ms = unix_ms_now();
    event.data_json = std::move(data_json);
    m_webhooks->post(event);
}

void Service::every_second() {
    m_next_second = Clock::now() + std::chrono::seconds(1);
    notify_status();
    publish_progress();
    adapt();
    m_scheduler->pace_deadlines();
    if (m_dbus)
        m_dbus->on_progress();
}

// At most once a second per disk: this runs on the 1 s timer only.
void Service::publish_progress() {
    for (const auto& d : m_scheduler->disks())
        if (d.state == DiskState::running || d.state == DiskState::paused)
            m_events.publish("progress", json_text({{"id", d.identity},
                                                    {"progress", nlohmann::json(d.progress)}}));
}

// The readings for adaptive mode; the law is in scheduler/adaptive.hh.
void Service::adapt() {
    if (!m_config.adaptive) {
        m_scheduler->set_pressure(1, 0, "");
        return;
    }
    const auto text = read_text_file("/proc/diskstats");
    if (text.empty())
        return;
    AdaptiveMode::Reading reading;
    reading.diskstats = text;
    reading.at = Clock::now();
    const auto disks = m_scheduler->disks();
    for (const auto& d : disks)
        if (d.state == DiskState::running) {
            reading.warming.insert(d.disk.name);
            reading.warming_bytes_per_s += d.progress.rate_1s_bytes_per_s;
        }
    // [prefill] adaptive_watch: only the disks it names count.
    const auto& watch = m_config.adaptive_watch_rules;
    if (!watch.empty()) {
        reading.watched.emplace();
        for (const auto& d : disks)
            if (std::any_of(watch.begin(), watch.end(),
                            [&](const MatchRule& rule) { return rule.matches(d.disk); }))
                reading.watched->insert(d.disk.name);
    }
    const auto pressure = m_adaptive.update(reading);
    if (const auto news = m_adaptive.take_news(); !news.empty())
        log_info(news);
    if (pressure)
        m_scheduler->set_pressure(pressure->factor, pressure->reference_bytes_per_s,
                                  m_adaptive.describe());
}

void Service::grace_outcomes() {
    for (const auto& outcome : m_grace->take_decided(Clock::now()))
        m_scheduler->on_grace(outcome.key, outcome.in_use, outcome.why);
    notify_status();
}

// To the scheduler once its volume is known: a Xen disk's is read off the loop
// (discovery/volume_reader.hh), any other has none. `then` runs once the disk is
// with the scheduler, or dropped.
void Service::attach(const DiskInfo& disk, std::function<void()> then) {
    const auto attach = ++m_attaches[disk.devpath];
    if (!names_xen_volume(disk)) {
        m_scheduler->on_attached(disk);
        if (then)
            then();
        return;
    }
    m_volumes->read(disk, [this, attach, then = std::move(then)](DiskInfo read) {
        if (m_attaches[read.devpath] == attach) { // not detached, nor attached again, meanwhile
            if (read.volume.empty())
                log_info(disk_identity(read) + " (" + read.name +
                         "): its volume cannot be read from xenstore");
            m_scheduler->on_attached(read);
            notify_status();
        }
        if (then)
            then();
    });
}

void Service::on_udev() {
    while (auto event = m_monitor->receive())
        for (const auto& update : m_tracker.on_uevent(event->action, event->disk)) {
            switch (update.event) {
            case DiskTracker::Event::attached:
                attach(update.disk);
                break;
            case DiskTracker::Event::detached:
                ++m_attaches[update.disk.devpath];
                m_scheduler->on_detached(update.disk);
                break;
            case DiskTracker::Event::changed:
                // A new size is a new identity: the disk as it was is gone.
                log_info(disk_identity(update.disk) + " (" + update.disk.name + "): " + update.why);
                attach(update.disk);
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
        if (m_api)
            m_api->stop(); // no new commands while the jobs stop
        m_scheduler->shutdown();
        m_loop->quit();
        return;
    }
}

void Service::reload() {
    sd_notify(0, "RELOADING=1");
    auto fresh = load_config(m_options.config_path, !m_options.config_given);
    if (fresh)
        if (auto valid = check_config(*fresh); !valid)
            fresh = valid.error();
    if (fresh)
        if (const auto over = m_scheduler->over_budget(*fresh); !over.empty())
            fresh = Error{-E2BIG, "[prefill] max_parallel, queue_depth, chunk with the queue "
                                  "depths starts asked for: " + over};
    if (!fresh) {
        log_error("reload: " + fresh.error().message + "; keeping the settings in force");
        sd_notify(0, "READY=1");
        return;
    }
    fresh->state_dir = m_config.state_dir; // needs a restart
    const auto plan = plan_reload(m_config, *fresh);
    std::string applied, waiting;
    for (const auto& a : plan.applied)
        applied += " " + a;
    for (const auto& w : plan.need_restart)
        waiting += " " + w;
    log_info("reload: " + (applied.empty() ? std::string("nothing changed") : "applied" + applied) +
             (waiting.empty() ? "" : "; needs a restart, kept as it was:" + waiting));
    m_config = std::move(*fresh);
    set_log_level(m_config.log_level);
    m_scheduler->config_changed();
    if (!m_config.wait_for_boot)
        m_scheduler->set_boot_finished(true);
    if (m_dbus)
        m_dbus->set_group(m_config.dbus_group);
    // The secret too: a rotation.
    if (auto webhooks = webhook_settings(m_config))
        m_webhooks->reload(std::move(*webhooks));
    else
        log_error("reload: " + webhooks.error().message + "; the webhooks stay as they were");
    // The token is read again whether or not the file's name changed: a rotation.
    if (m_api)
        if (auto access = m_api->reload_access(m_config); !access)
            log_error("reload: " + access.error().message +
                      "; no token works until the file is fixed and the daemon reloaded");
    settings_changed();
    sd_notify(0, "READY=1");
    notify_status();
}

void Service::notify_status() {
    const auto line = m_scheduler->status_line();
    if (line == m_last_status)
        return;
    m_last_status = line;
    sd_notifyf(0, "STATUS=%s", line.c_str());
}

// What refers to the scheduler goes first; the scheduler's own shutdown has run.
Service::~Service() {
    m_volumes.reset(); // its thread posts to the dispatcher
    m_api.reset();
    m_dbus.reset();
    m_system.reset();
    m_bus.reset();
}

int Service::run() {
    if (auto started = start(); !started) {
        log_error(started.error().message);
        return started.error().err == -EINVAL ? exit_config : exit_failure;
    }
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

Result<void> check_config(const Config& config) {
    if (auto webhooks = webhook_settings(config); !webhooks)
        return webhooks.error();
    return check_api_config(config);
}

int run_service(const ServiceOptions& options) {
    auto config = load_config(options.config_path, !options.config_given);
    if (config && options.state_dir)
        config->state_dir = *options.state_dir;
    // The whole configuration, before anything else: what `config --check` refuses.
    if (config)
        if (auto valid = check_config(*config); !valid)
            config = valid.error();
    if (!config) {
        setup_log("info");
        log_error(config.error().message);
        return exit_config;
    }
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
