// What the API serves and steers, whoever runs it: the daemon's scheduler (from
// its own thread), or a fake in the tests and the fuzzer.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/result.hh"
#include "config/config.hh"
#include "events/outbox.hh"
#include "scheduler/scheduler.hh"

namespace prewarmd {

struct ApiSettings {
    uint64_t total_rate_bytes_per_s = 0; // 0: unlimited
    unsigned max_parallel = 1;
    AutoPrefill auto_prefill = AutoPrefill::blank;
};

using ApiSettingsPatch = SettingsChange;

class ApiBackend {
public:
    virtual ~ApiBackend() = default;
    // Every call may fail with -EAGAIN: the daemon did not answer in time.
    virtual Result<std::vector<DiskView>> disks() = 0;
    virtual Result<std::optional<DiskView>> disk(const std::string& identity) = 0;
    // Errors as the scheduler gives them: -ENOENT, -ENODEV, -EBUSY, -EINVAL.
    virtual Result<void> act(const std::string& identity, DiskAction action,
                             const StartRequest& start) = 0;
    // Probes the disk now, under an exclusive open, with no job on it: its warm
    // places when it has a cold probe (a re-probe: did the warming stick?), else a
    // cold probe. Takes up to seconds; the disk's figures after it.
    virtual Result<ProbeFigures> probe(const std::string& identity) = 0;
    virtual Result<ApiSettings> settings() = 0;
    virtual Result<ApiSettings> update_settings(const ApiSettingsPatch& patch) = 0;
    // Discovery runs: the daemon has enumerated the disks and listens to udev.
    virtual bool ready() = 0;
    // The webhooks' outbox and deliveries (any thread: it has its own lock).
    virtual OutboxFigures outbox() = 0;
};

} // namespace prewarmd
