// The webhooks (docs/events.md): each event goes to the outbox first, then to every
// receiver from that receiver's own thread, signed at each attempt, retried with
// backoff and jitter until it answers 2xx. A receiver slow, dead or hanging holds
// up only its own thread: never a job, the loop or the API.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/result.hh"
#include "events/cloud_event.hh"
#include "events/outbox.hh"

namespace prewarmd {

struct WebhookSettings {
    std::vector<std::string> urls; // http:// or https://
    std::string key;               // the signing key (webhook_key)
    std::string ca_file;           // "": the system's CA store
    size_t outbox_max = 1000;
};

// "https://host:8443/a/b?c" as {"https://host:8443", "/a/b?c"}; an error for anything
// but http(s) with a host.
Result<std::pair<std::string, std::string>> split_webhook_url(const std::string& url);

// The wait before attempt `failures` + 1, for a receiver that failed `failures`
// times in a row: 1 s doubling up to 5 min, drawn from its upper half (`draw`, 0
// to 1): receivers that failed together do not all come back at once.
std::chrono::milliseconds webhook_backoff(unsigned failures, double draw);

class Webhooks {
public:
    using Log = std::function<void(bool warning, const std::string& line)>;

    // The outbox in `dir`, loaded; a thread per receiver, sending what it holds.
    static Result<std::unique_ptr<Webhooks>> start(const std::string& dir,
                                                   WebhookSettings settings, Log log);
    ~Webhooks(); // an attempt in flight is cut short; what is left waits in the outbox

    // To every receiver: in the outbox when this returns (or said why not).
    void post(const CloudEvent& event);
    // Receivers no longer named stop, and their events go; new ones start.
    void reload(WebhookSettings settings);
    OutboxFigures figures() const;

    class Receiver;

private:
    Webhooks(std::unique_ptr<Outbox> box, Log log);
    void start_receivers();

    std::unique_ptr<Outbox> m_box;
    Log m_log;
    mutable std::mutex m_mutex; // m_settings, m_receivers, the figures
    WebhookSettings m_settings;
    std::map<std::string, std::unique_ptr<Receiver>> m_receivers;
    OutboxFigures m_figures;
};

} // namespace prewarmd
