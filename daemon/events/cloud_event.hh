// What a control plane hears (docs/events.md): a CloudEvents 1.0 event in its
// structured JSON form, and the Standard Webhooks signature of the POST that
// carries it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.hh"

namespace prewarmd {

struct CloudEvent {
    std::string id;      // new_event_id(): the same on every attempt, for receivers to dedupe
    std::string type;    // org.prewarmd.disk.warm
    std::string source;  // prewarmd://MACHINE-ID/disks/DISK-ID
    std::string subject; // the disk's id
    int64_t time_unix_ms = 0;
    std::string data_json; // the disk as GET /v1/disks/{id} shows it
};

// specversion, id, source, type, subject, time (RFC 3339, UTC), datacontenttype, data.
std::string event_json(const CloudEvent& event);

// The wall clock in Unix milliseconds: an event's time, a signature's timestamp.
int64_t unix_ms_now();

// A random UUID (version 4).
Result<std::string> new_event_id();

// The signing key in a secret file's text: "whsec_" and base64 (as Standard
// Webhooks' libraries make them), or else the text's own bytes; 16 bytes at least.
Result<std::string> webhook_key(std::string_view secret);

// "v1," and the base64 of HMAC-SHA256(key, "ID.TIMESTAMP.BODY").
std::string webhook_signature(std::string_view key, std::string_view id, int64_t timestamp,
                              std::string_view body);

} // namespace prewarmd
