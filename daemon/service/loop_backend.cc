#include "service/loop_backend.hh"

#include <cerrno>

#include "job/probe_disk.hh"
#include "service/log.hh"

namespace prewarmd {
namespace {

constexpr auto api_timeout = std::chrono::seconds(2);

Error busy() {
    return Error{-EAGAIN, "the daemon did not answer in time"};
}

} // namespace

LoopBackend::LoopBackend(Dispatcher& dispatcher, Scheduler& scheduler,
                         const std::atomic<bool>& ready, std::function<void()> settings_changed,
                         const Webhooks& webhooks)
    : m_dispatcher(dispatcher), m_scheduler(scheduler), m_ready(ready),
      m_settings_changed(std::move(settings_changed)), m_webhooks(webhooks) {}

template <typename Work>
auto LoopBackend::on_loop(Work work) -> Result<decltype(work())> {
    auto answer = m_dispatcher.call(std::move(work), api_timeout);
    if (!answer)
        return busy();
    return std::move(*answer);
}

Result<std::vector<DiskView>> LoopBackend::disks() {
    return on_loop([this] { return m_scheduler.disks(); });
}

Result<std::optional<DiskView>> LoopBackend::disk(const std::string& id) {
    return on_loop([this, id] { return m_scheduler.disk(id); });
}

Result<void> LoopBackend::act(const std::string& id, DiskAction action, const StartRequest& start) {
    auto done = on_loop([this, id, action, start] { return m_scheduler.act(id, action, start); });
    if (!done)
        return done.error();
    return *done;
}

Result<ProbeFigures> LoopBackend::probe(const std::string& id) {
    auto ticket = on_loop([this, id] { return m_scheduler.begin_probe(id); });
    if (!ticket)
        return ticket.error();
    if (!*ticket)
        return ticket->error();
    // Here, on the HTTP worker's thread: the loop goes on meanwhile.
    auto figures = probe_disk((*ticket)->disk, (*ticket)->before);
    // Posted, not called: it runs whenever the loop can, and the disk is never left
    // marked as probed.
    m_dispatcher.post([this, id, figures] { m_scheduler.end_probe(id, figures); });
    return figures;
}

Result<ApiSettings> LoopBackend::settings() {
    return on_loop([this] { return current(); });
}

Result<ApiSettings> LoopBackend::update_settings(const ApiSettingsPatch& patch) {
    auto done = on_loop([this, patch]() -> Result<ApiSettings> {
        if (auto changed = m_scheduler.change(patch); !changed)
            return changed.error();
        log_info("api: settings now: total_rate " +
                 std::to_string(m_scheduler.config().total_rate_bytes_per_s) +
                 " B/s, max_parallel " + std::to_string(m_scheduler.config().max_parallel));
        m_settings_changed();
        return current();
    });
    if (!done)
        return done.error();
    return *done;
}

ApiSettings LoopBackend::current() const {
    const auto& c = m_scheduler.config();
    return {c.total_rate_bytes_per_s, c.max_parallel, c.auto_prefill};
}

} // namespace prewarmd
