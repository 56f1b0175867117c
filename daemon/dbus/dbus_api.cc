#include "dbus/dbus_api.hh"

#include <grp.h>

#include <algorithm>
#include <cerrno>
#include <type_traits>

#include "dbus/sdbus_compat.hh"
#include "prewarmd1_adaptor.hh" // generated from api/org.prewarmd.Prewarmd1.xml
#include "control/refusal.hh"

namespace prewarmd {
namespace {

namespace gen = org::prewarmd::Prewarmd1;
using sdbus_compat::InterfaceName;
using sdbus_compat::names;
using sdbus_compat::PropertyName;

constexpr const char* disk_interface = gen::Disk_adaptor::INTERFACE_NAME;
constexpr const char* manager_interface = gen::Manager_adaptor::INTERFACE_NAME;

[[noreturn]] void fail(const Error& error) {
    throw sdbus_compat::error(std::string(row_of(refusal_of(error)).dbus_error), error.message);
}

[[noreturn]] void invalid_args(const std::string& why) {
    throw sdbus_compat::error(std::string(row_of(Refusal::out_of_range).dbus_error), why);
}

const char* dbus_type_name(std::string_view type) {
    return type == "u"   ? "an unsigned 32-bit integer (u)"
           : type == "t" ? "an unsigned 64-bit integer (t)"
                         : "a string (s)";
}

// A D-Bus value of a field (control/schema.hh): its type as the field says, then
// its range; InvalidArgs saying which, otherwise.
FieldValue checked(const Field& field, const sdbus::Variant& value) {
    FieldValue raw;
    if (field.dbus_type == "s" && value.containsValueOfType<std::string>())
        raw = value.get<std::string>();
    else if (field.dbus_type == "u" && value.containsValueOfType<uint32_t>())
        raw = uint64_t{value.get<uint32_t>()};
    else if (field.dbus_type == "t" && value.containsValueOfType<uint64_t>())
        raw = value.get<uint64_t>();
    else
        invalid_args(std::string(field.key) + " is " + dbus_type_name(field.dbus_type));
    auto good = check_value(field, raw);
    if (!good)
        invalid_args(good.error().message);
    return *good;
}

// Signals to a bus that went away fail; the Bus reports that once.
template <typename Emit>
void emit_quietly(Emit emit) {
    try {
        emit();
    } catch (const sdbus::Error&) {
    }
}

} // namespace

class DbusApi::Manager final
    : public sdbus::AdaptorInterfaces<gen::Manager_adaptor, sdbus::ObjectManager_adaptor,
                                      sdbus::Properties_adaptor> {
public:
    Manager(sdbus::IConnection& connection, Scheduler& scheduler, std::string group, LogFn log)
        : AdaptorInterfaces(connection, sdbus::ObjectPath(dbus_manager_path)),
          m_scheduler(scheduler), m_group(std::move(group)), m_log(std::move(log)) {
        registerAdaptor();
    }
    ~Manager() { unregisterAdaptor(); }

    void set_group(std::string g) { m_group = std::move(g); }

private:
    // Changes are for root and the members of [dbus] group; the bus policy says the
    // same, this holds where no policy was installed.
    void authorize(const std::string& what) {
        const auto caller = sdbus_compat::current_caller(getObject());
        if (!caller)
            return;
        const uid_t uid = caller->uid;
        if (uid == 0)
            return;
        if (!m_group.empty()) {
            if (const group* g = ::getgrnam(m_group.c_str())) {
                const auto& gids = caller->groups;
                if (caller->gid == g->gr_gid ||
                    std::find(gids.begin(), gids.end(), g->gr_gid) != gids.end())
                    return;
            }
        }
        throw sdbus_compat::error(
            "org.freedesktop.DBus.Error.AccessDenied",
            what + " is for root" +
                (m_group.empty() ? std::string() : " and the group " + m_group) + " (uid " +
                std::to_string(uid) + " is neither)");
    }

    void act(const std::string& id, DiskAction action, const StartRequest& start = {}) {
        authorize(std::string(action == DiskAction::start ? "Start" : "this command"));
        if (auto done = m_scheduler.act(id, action, start); !done)
            fail(done.error());
    }

    std::vector<
        sdbus::Struct<std::string, sdbus::ObjectPath, std::string, std::string, uint64_t, double>>
    ListDisks() override {
        std::vector<sdbus::Struct<std::string, sdbus::ObjectPath, std::string, std::string,
                                  uint64_t, double>>
            out;
        for (const auto& d : m_scheduler.disks())
            out.emplace_back(d.identity, sdbus::ObjectPath(disk_path(d.identity)), d.disk.name,
                             std::string(to_string(d.state)), d.disk.size_bytes,
                             d.progress_ratio());
        return out;
    }

    sdbus::ObjectPath Start(const std::string& id,
                            const std::map<std::string, sdbus::Variant>& options) override {
        StartRequest start;
        for (const auto& [key, value] : options) {
            const Field* field = field_by_key(start_fields(), key);
            if (!field)
                invalid_args("unknown option " + key + " (" + field_keys(start_fields()) + ")");
            start.set(*field, checked(*field, value));
        }
        act(id, DiskAction::start, start);
        return sdbus::ObjectPath(disk_path(id));
    }
    void Pause(const std::string& id) override { act(id, DiskAction::pause); }
    void Resume(const std::string& id) override { act(id, DiskAction::resume); }
    void Cancel(const std::string& id) override { act(id, DiskAction::cancel); }
    void Release(const std::string& id) override { act(id, DiskAction::release); }

    uint64_t TotalRateBytesPerSecond() override {
        return m_scheduler.config().total_rate_bytes_per_s;
    }
    void TotalRateBytesPerSecond(const uint64_t& value) override {
        set_setting("TotalRateBytesPerSecond", sdbus::Variant(value));
    }
    uint32_t MaxParallel() override { return m_scheduler.config().max_parallel; }
    void MaxParallel(const uint32_t& value) override {
        set_setting("MaxParallel", sdbus::Variant(value));
    }
    std::string AutoPrefill() override {
        return std::string(to_string(m_scheduler.config().auto_prefill));
    }
    void AutoPrefill(const std::string& value) override {
        set_setting("AutoPrefill", sdbus::Variant(value));
    }

    // A settings property set: who may, the value by its field, the change.
    void set_setting(const char* property, const sdbus::Variant& value) {
        authorize(std::string("Setting ") + property);
        const Field& field = *field_by_property(setting_fields(), property);
        const auto good = checked(field, value);
        SettingsChange change;
        change.set(field, good);
        if (auto changed = m_scheduler.change(change); !changed)
            fail(changed.error());
        m_log(false, "dbus: " + std::string(field.key) + " now " +
                         std::visit(
                             [](const auto& v) {
                                 if constexpr (std::is_same_v<std::decay_t<decltype(v)>, uint64_t>)
                                     return std::to_string(v);
                                 else
                                     return v;
                             },
                             good));
        emitPropertiesChangedSignal(InterfaceName(manager_interface),
                                    names<PropertyName>(property));
    }
    bool BootFinished() override { return m_scheduler.boot_finished(); }
    std::string Version() override { return PREWARMD_VERSION; }

    Scheduler& m_scheduler;
    std::string m_group;
    LogFn m_log;
};

class DbusApi::DiskObject final
    : public sdbus::AdaptorInterfaces<gen::Disk_adaptor, sdbus::Properties_adaptor,
                                      sdbus::ManagedObject_adaptor> {
public:
    DiskObject(sdbus::IConnection& connection, Scheduler& scheduler, std::string identity)
        : AdaptorInterfaces(connection, sdbus::ObjectPath(disk_path(identity))),
          m_scheduler(scheduler), m_identity(std::move(identity)) {
        registerAdaptor();
    }
    ~DiskObject() { unregisterAdaptor(); }

private:
    DiskView view() const { return m_scheduler.disk(m_identity).value_or(DiskView{}); }

    std::string Id() override { return m_identity; }
    std::string Name() override { return view().disk.name; }
    std::string DevNode() override { return view().disk.devnode; }
    uint64_t SizeBytes() override { return view().disk.size_bytes; }
    bool Attached() override { return view().attached; }
    std::string Verdict() override { return std::string(to_string(view().verdict)); }
    std::vector<std::string> VerdictReasons() override { return view().verdict_reasons; }
    std::string State() override { return std::string(to_string(view().state)); }
    std::string Reason() override { return view().reason; }
    std::string JobKind() override { return std::string(kind_name(view().kind)); }
    std::string MountPoint() override {
        const auto v = view();
        const auto* fs = filesystem_of(v.kind);
        return fs ? fs->mount_point : std::string();
    }
    uint64_t TotalBytes() override { return view().progress.total_bytes; }
    uint64_t DoneBytes() override { return view().progress.done_bytes; }
    uint64_t WrittenBytes() override { return view().progress.written_bytes; }
    uint64_t SkippedBytes() override { return view().progress.skipped_bytes; }
    double RateBytesPerSecond() override { return view().progress.rate_10s_bytes_per_s; }
    int64_t EtaSeconds() override {
        const auto eta = view().progress.eta;
        return eta ? eta->count() : -1;
    }
    double WriteLatencyP50Seconds() override {
        return static_cast<double>(view().progress.write_latency.p50.count()) / 1e6;
    }
    double WriteLatencyP99Seconds() override {
        return static_cast<double>(view().progress.write_latency.p99.count()) / 1e6;
    }

    Scheduler& m_scheduler;
    std::string m_identity;
};

std::string DbusApi::disk_path(const std::string& identity) {
    return std::string(dbus_manager_path) + "/disks/" + bus_label(identity);
}

Result<std::unique_ptr<DbusApi>> DbusApi::start(Bus& bus, Scheduler& scheduler,
                                                const std::string& group, LogFn log) {
    std::unique_ptr<DbusApi> api(new DbusApi);
    api->m_bus = &bus;
    api->m_scheduler = &scheduler;
    try {
        api->m_manager =
            std::make_unique<Manager>(bus.connection(), scheduler, group, std::move(log));
        api->sync_objects();
        bus.connection().requestName(sdbus_compat::ServiceName(dbus_name));
    } catch (const sdbus::Error& e) {
        return Error{-EIO, std::string("D-Bus: cannot take the name ") + dbus_name + " on " +
                               bus.description() + ": " + e.getMessage()};
    }
    return api;
}

DbusApi::~DbusApi() {
    if (!m_bus)
        return;
    m_disks.clear();
    emit_quietly([&] { m_bus->connection().releaseName(sdbus_compat::ServiceName(dbus_name)); });
}

void DbusApi::set_group(const std::string& group) {
    m_manager->set_group(group);
}

// One object per disk the scheduler knows, no more.
void DbusApi::sync_objects() {
    const auto disks = m_scheduler->disks();
    for (auto it = m_disks.begin(); it != m_disks.end();) {
        const bool known = std::any_of(disks.begin(), disks.end(),
                                       [&](const DiskView& d) { return d.identity == it->first; });
        if (known) {
            ++it;
            continue;
        }
        emit_quietly(
            [&] { it->second->emitInterfacesRemovedSignal(names<InterfaceName>(disk_interface)); });
        it = m_disks.erase(it);
    }
    for (const auto& d : disks) {
        if (m_disks.count(d.identity))
            continue;
        auto object = std::make_unique<DiskObject>(m_bus->connection(), *m_scheduler, d.identity);
        emit_quietly(
            [&] { object->emitInterfacesAddedSignal(names<InterfaceName>(disk_interface)); });
        m_disks[d.identity] = std::move(object);
    }
}

void DbusApi::on_changed(DiskChange change, const std::string& identity) {
    try {
        sync_objects();
    } catch (const sdbus::Error&) {
        return;
    }
    const sdbus::ObjectPath path(disk_path(identity));
    const auto object = m_disks.find(identity);
    emit_quietly([&] {
        if (change == DiskChange::added) {
            m_manager->emitDiskAdded(identity, path);
        } else if (change == DiskChange::removed) {
            m_manager->emitDiskRemoved(identity, path);
        } else if (const auto disk = m_scheduler->disk(identity)) {
            m_manager->emitJobStateChanged(identity, path, std::string(to_string(disk->state)),
                                           disk->reason);
        }
        if (object != m_disks.end())
            object->second->emitPropertiesChangedSignal(InterfaceName(disk_interface));
    });
}

void DbusApi::on_progress() {
    for (const auto& d : m_scheduler->disks()) {
        if (d.state != DiskState::running && d.state != DiskState::paused)
            continue;
        const auto object = m_disks.find(d.identity);
        emit_quietly([&] {
            m_manager->emitProgress(d.identity, sdbus::ObjectPath(disk_path(d.identity)),
                                    d.progress.done_bytes, d.progress.total_bytes,
                                    d.progress.rate_10s_bytes_per_s);
            if (object != m_disks.end())
                object->second->emitPropertiesChangedSignal(
                    InterfaceName(disk_interface),
                    names<PropertyName>("DoneBytes", "WrittenBytes", "SkippedBytes", "TotalBytes",
                                        "RateBytesPerSecond", "EtaSeconds",
                                        "WriteLatencyP50Seconds", "WriteLatencyP99Seconds"));
        });
    }
}

void DbusApi::on_settings_changed() {
    emit_quietly([&] { m_manager->emitPropertiesChangedSignal(InterfaceName(manager_interface)); });
}

} // namespace prewarmd
