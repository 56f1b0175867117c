#include "events/webhooks.hh"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <optional>
#include <random>
#include <thread>

#include <httplib.h>

#include "base/private_file.hh"

namespace prewarmd {
namespace {

constexpr auto connect_timeout = std::chrono::seconds(5);
constexpr auto answer_timeout = std::chrono::seconds(10);

} // namespace

Result<std::pair<std::string, std::string>> split_webhook_url(const std::string& url) {
    const auto scheme_end = url.find("://");
    const std::string scheme = scheme_end == std::string::npos ? "" : url.substr(0, scheme_end);
    if (scheme != "http" && scheme != "https")
        return Error{-EINVAL, "\"" + url + "\": expected an http:// or https:// URL"};
    const auto path_at = url.find_first_of("/?", scheme_end + 3);
    const std::string origin = url.substr(0, path_at);
    if (origin.size() == scheme_end + 3 || origin.find_first_of(" @") != std::string::npos)
        return Error{-EINVAL, "\"" + url + "\": expected a host after " + scheme + "://"};
    std::string path = path_at == std::string::npos ? "/" : url.substr(path_at);
    if (path[0] == '?')
        path = "/" + path;
    return std::pair{origin, path};
}

std::chrono::milliseconds webhook_backoff(unsigned failures, double draw) {
    const double top_s = std::min(300.0, static_cast<double>(1u << std::min(failures - 1, 9u)));
    return std::chrono::milliseconds(static_cast<int64_t>(1000 * top_s * (0.5 + 0.5 * draw)));
}

// One receiver's thread: the oldest event for it, until it takes it; then the next.
class Webhooks::Receiver {
public:
    Receiver(Webhooks& hooks, std::string url) : m_hooks(hooks), m_url(std::move(url)) {
        m_thread = std::thread([this] { run(); });
    }
    ~Receiver() {
        {
            std::lock_guard lock(m_mutex);
            m_stop = true;
            if (m_client)
                m_client->stop();
        }
        m_wake.notify_all();
        m_thread.join();
    }
    // An event for it is in the outbox.
    void notify() {
        { std::lock_guard lock(m_mutex); } // it waits, or sees the event before it does
        m_wake.notify_all();
    }

private:
    void run();
    // "" when the receiver took it, else why not.
    std::string attempt(const Outbox::Entry& entry);

    Webhooks& m_hooks;
    const std::string m_url;
    std::mutex m_mutex;
    std::condition_variable m_wake;
    bool m_stop = false;
    httplib::Client* m_client = nullptr; // the attempt in flight
    std::thread m_thread;
};

// Never holds its own lock while it takes the Webhooks' (post() takes them the other
// way round).
void Webhooks::Receiver::run() {
    std::mt19937_64 random(std::random_device{}());
    std::uniform_real_distribution<double> draw(0, 1);
    unsigned failures = 0;
    for (;;) {
        std::optional<Outbox::Entry> entry;
        {
            std::unique_lock lock(m_mutex);
            m_wake.wait(lock, [&] {
                return m_stop || (entry = m_hooks.m_box->first(m_url)).has_value();
            });
            if (m_stop)
                return;
        }
        const auto why = attempt(*entry);
        {
            std::lock_guard lock(m_mutex);
            if (m_stop) // cut short: no failure of the receiver's, tried at the next start
                return;
        }
        if (why.empty()) {
            m_hooks.m_box->remove(entry->seq);
            {
                std::lock_guard lock(m_hooks.m_mutex);
                ++m_hooks.m_figures.delivered;
                m_hooks.m_figures.last_delivery_s =
                    static_cast<double>(unix_ms_now() - entry->time_unix_ms) / 1000;
            }
            if (std::exchange(failures, 0) > 0)
                m_hooks.m_log(false, "webhook " + m_url + ": delivering again");
            continue;
        }
        {
            std::lock_guard lock(m_hooks.m_mutex);
            ++m_hooks.m_figures.failed_attempts;
        }
        const auto wait = webhook_backoff(++failures, draw(random));
        if (failures == 1 || failures % 10 == 0)
            m_hooks.m_log(true, "webhook " + m_url + ": " + why + " (" + std::to_string(failures) +
                                    (failures == 1 ? " attempt" : " attempts") +
                                    "); the event waits in the outbox, tried again in " +
                                    std::to_string((wait.count() + 999) / 1000) + " s");
        std::unique_lock lock(m_mutex);
        if (m_wake.wait_for(lock, wait, [&] { return m_stop; }))
            return;
    }
}

std::string Webhooks::Receiver::attempt(const Outbox::Entry& entry) {
    const auto where = split_webhook_url(m_url);
    if (!where)
        return where.error().message;
    std::string key, ca_file;
    {
        std::lock_guard lock(m_hooks.m_mutex);
        key = m_hooks.m_settings.key;
        ca_file = m_hooks.m_settings.ca_file;
    }
    httplib::Client client(where->first);
    client.set_connection_timeout(connect_timeout);
    client.set_read_timeout(answer_timeout);
    client.set_write_timeout(answer_timeout);
    client.enable_server_certificate_verification(true);
    if (!ca_file.empty())
        client.set_ca_cert_path(ca_file);
    const auto timestamp = unix_ms_now() / 1000;
    const httplib::Headers headers = {
        {"webhook-id", entry.id},
        {"webhook-timestamp", std::to_string(timestamp)},
        {"webhook-signature", webhook_signature(key, entry.id, timestamp, entry.body)},
        {"User-Agent", "prewarmd"},
    };
    forget_secret(key);
    {
        std::lock_guard lock(m_mutex);
        if (m_stop)
            return "stopping";
        m_client = &client;
    }
    const auto answer =
        client.Post(where->second, headers, entry.body, "application/cloudevents+json");
    {
        std::lock_guard lock(m_mutex);
        m_client = nullptr;
    }
    if (!answer)
        return httplib::to_string(answer.error());
    if (answer->status / 100 != 2)
        return "answered " + std::to_string(answer->status);
    return {};
}

Webhooks::Webhooks(std::unique_ptr<Outbox> box, Log log)
    : m_box(std::move(box)), m_log(std::move(log)) {}

Result<std::unique_ptr<Webhooks>> Webhooks::start(const std::string& dir, WebhookSettings settings,
                                                  Log log) {
    std::vector<std::string> damaged;
    auto box = Outbox::open(dir, settings.outbox_max, damaged);
    if (!box)
        return box.error();
    for (const auto& path : damaged)
        log(true, "webhook outbox: " + path + " could not be read as an event: removed");
    std::unique_ptr<Webhooks> hooks(new Webhooks(std::move(*box), std::move(log)));
    hooks->reload(std::move(settings));
    return hooks;
}

Webhooks::~Webhooks() {
    std::map<std::string, std::unique_ptr<Receiver>> receivers;
    {
        std::lock_guard lock(m_mutex);
        receivers.swap(m_receivers);
    }
}

void Webhooks::post(const CloudEvent& event) {
    std::lock_guard lock(m_mutex);
    if (m_settings.urls.empty())
        return;
    const auto body = event_json(event);
    for (const auto& url : m_settings.urls) {
        if (auto kept = m_box->add(url, event.id, event.time_unix_ms, body); !kept) {
            ++m_figures.dropped;
            m_log(true, "webhook " + url + ": " + event.type + " for " + event.subject +
                            " could not be kept in the outbox (" + kept.error().message +
                            "): it is not sent");
            continue;
        }
        if (const auto r = m_receivers.find(url); r != m_receivers.end())
            r->second->notify();
    }
}

void Webhooks::reload(WebhookSettings settings) {
    std::map<std::string, std::unique_ptr<Receiver>> gone;
    {
        std::lock_guard lock(m_mutex);
        for (auto r = m_receivers.begin(); r != m_receivers.end();)
            if (std::find(settings.urls.begin(), settings.urls.end(), r->first) ==
                settings.urls.end()) {
                gone.insert(m_receivers.extract(r++));
            } else {
                ++r;
            }
        m_settings = std::move(settings);
    }
    gone.clear(); // their threads end outside the lock: they take it to count
    if (const auto dropped = m_box->keep_only(m_settings.urls, m_settings.outbox_max))
        m_log(true, "webhook outbox: " + std::to_string(dropped) +
                        " event(s) dropped: for receivers no longer named, or over outbox_max");
    std::lock_guard lock(m_mutex);
    for (const auto& url : m_settings.urls)
        if (!m_receivers.count(url))
            m_receivers.emplace(url, std::make_unique<Receiver>(*this, url));
}

OutboxFigures Webhooks::figures() const {
    std::lock_guard lock(m_mutex);
    auto out = m_figures;
    out.waiting = m_box->size();
    out.dropped += m_box->dropped();
    return out;
}

} // namespace prewarmd
