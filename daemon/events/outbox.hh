// Events on their way to the webhooks: one file per event and receiver in
// STATE_DIR/outbox, written (atomically, synced) before the first attempt and
// removed once the receiver took it. A restart, even after kill -9, sends what is
// left: at least once, in order per receiver. At most `max` wait; past it the
// oldest go, and are counted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hh"

namespace prewarmd {

struct OutboxFigures {
    uint64_t waiting = 0;
    uint64_t dropped = 0;          // this run: over the cap, or for a receiver no longer named
    uint64_t delivered = 0;        // this run
    uint64_t failed_attempts = 0;  // this run: no answer, or not 2xx
    double last_delivery_s = 0;    // from the event's time to the receiver's 2xx, last one
};

class Outbox {
public:
    struct Entry {
        uint64_t seq = 0;
        std::string url;
        std::string id;
        int64_t time_unix_ms = 0; // the event's
        std::string body;         // the event, as sent
    };

    // Creates the directory (0700) and loads what it holds. A file that cannot be
    // read as an entry is removed, and said in `damaged`.
    static Result<std::unique_ptr<Outbox>> open(const std::string& dir, size_t max,
                                                std::vector<std::string>& damaged);

    // The event for `url`, on disk when this returns; the oldest go past the cap.
    Result<void> add(const std::string& url, const std::string& id, int64_t time_unix_ms,
                     const std::string& body);
    // The oldest entry for `url`.
    std::optional<Entry> first(const std::string& url) const;
    void remove(uint64_t seq);
    // Entries for receivers not in `urls` are dropped (a reload named others); the
    // cap becomes `max`. How many went.
    size_t keep_only(const std::vector<std::string>& urls, size_t max);

    size_t size() const;
    uint64_t dropped() const;

private:
    Outbox(std::string dir, size_t max) : m_dir(std::move(dir)), m_max(max) {}
    std::string path_of(uint64_t seq) const;
    void erase_at(size_t index);
    void trim();

    mutable std::mutex m_mutex;
    std::string m_dir;
    size_t m_max;
    std::vector<Entry> m_entries; // by seq
    uint64_t m_next_seq = 1;
    uint64_t m_dropped = 0;
};

} // namespace prewarmd
