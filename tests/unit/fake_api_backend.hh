// An ApiBackend without a daemon, for the router's tests and its fuzzer.
#pragma once

#include <cerrno>

#include "api/backend.hh"

namespace prewarmd {

// Two disks and the settings; every call that would change something is recorded.
class FakeBackend final : public ApiBackend {
public:
    FakeBackend() {
        DiskView a;
        a.identity = "xen-vbd-51728-4294967296";
        a.disk.name = "xvdb";
        a.disk.devnode = "/dev/xvdb";
        a.disk.size_bytes = 4ull << 30;
        a.attached = true;
        a.verdict = Verdict::eligible;
        a.state = DiskState::discovered;
        DiskView b = a;
        b.identity = "loop-odd\"name";
        b.disk.name = "loop\\0";
        m_disks = {a, b};
    }

    Result<std::vector<DiskView>> disks() override {
        if (busy)
            return Error{-EAGAIN, "busy"};
        return m_disks;
    }
    Result<std::optional<DiskView>> disk(const std::string& identity) override {
        for (const auto& d : m_disks)
            if (d.identity == identity)
                return std::optional<DiskView>(d);
        return std::optional<DiskView>();
    }
    Result<void> act(const std::string& identity, DiskAction action,
                     const StartRequest& start) override {
        if (act_error)
            return Error{act_error, "refused by the fake"};
        if (!*disk(identity))
            return Error{-ENOENT, "no disk " + identity};
        actions.emplace_back(identity, action);
        last_start = start;
        return {};
    }
    Result<ProbeFigures> probe(const std::string& identity) override {
        if (act_error)
            return Error{act_error, "refused by the fake"};
        if (!*disk(identity))
            return Error{-ENOENT, "no disk " + identity};
        probes.push_back(identity);
        return ProbeFigures{};
    }
    Result<ApiSettings> settings() override { return m_settings; }
    Result<ApiSettings> update_settings(const ApiSettingsPatch& patch) override {
        ++updates;
        if (patch.total_rate_bytes_per_s)
            m_settings.total_rate_bytes_per_s = *patch.total_rate_bytes_per_s;
        if (patch.max_parallel)
            m_settings.max_parallel = *patch.max_parallel;
        if (patch.auto_prefill)
            m_settings.auto_prefill = *patch.auto_prefill;
        return m_settings;
    }
    bool ready() override { return is_ready; }
    OutboxFigures outbox() override { return outbox_figures; }

    bool busy = false;
    bool is_ready = true;
    OutboxFigures outbox_figures;
    int act_error = 0;
    int updates = 0;
    std::vector<std::pair<std::string, DiskAction>> actions;
    std::vector<std::string> probes;
    StartRequest last_start;
    std::vector<DiskView> m_disks;
    ApiSettings m_settings{32 << 20, 1, AutoPrefill::blank};
};

} // namespace prewarmd
