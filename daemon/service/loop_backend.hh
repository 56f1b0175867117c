// The API's view of the daemon (api/backend.hh): every call runs on the event loop's
// thread through the dispatcher, so the scheduler stays single-threaded; a call that
// gets no answer within 2 s says so (-EAGAIN: 503 busy).
#pragma once

#include <atomic>
#include <functional>

#include "api/backend.hh"
#include "base/dispatcher.hh"
#include "events/webhooks.hh"
#include "scheduler/scheduler.hh"

namespace prewarmd {

class LoopBackend final : public ApiBackend {
public:
    LoopBackend(Dispatcher& dispatcher, Scheduler& scheduler, const std::atomic<bool>& ready,
                std::function<void()> settings_changed, const Webhooks& webhooks);

    Result<std::vector<DiskView>> disks() override;
    Result<std::optional<DiskView>> disk(const std::string& id) override;
    Result<void> act(const std::string& id, DiskAction action, const StartRequest& start) override;
    Result<ProbeFigures> probe(const std::string& id) override;
    Result<ApiSettings> settings() override;
    Result<ApiSettings> update_settings(const ApiSettingsPatch& patch) override;
    bool ready() override { return m_ready; }
    OutboxFigures outbox() override { return m_webhooks.figures(); }

private:
    template <typename Work>
    auto on_loop(Work work) -> Result<decltype(work())>;
    ApiSettings current() const;

    Dispatcher& m_dispatcher;
    Scheduler& m_scheduler;
    const std::atomic<bool>& m_ready;
    std::function<void()> m_settings_changed;
    const Webhooks& m_webhooks;
};

} // namespace prewarmd
