// Sizes, rates and durations as people write them ("4MiB", "100MiB/s", "2ms"),
// parsed strictly and printed in IEC units.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.hh"

namespace prewarmd {

// Bytes. Units: B, KiB..PiB and K..P (powers of 1024), kB..PB (powers of 1000);
// case-insensitive; a fraction is allowed when the result is a whole number of bytes.
Result<uint64_t> parse_size(std::string_view text);

// Bytes per second: a size followed by "/s" ("100MiB/s").
Result<uint64_t> parse_rate(std::string_view text);
// A rate, or "unlimited": 0, as a rate of 0 means wherever one is given.
Result<uint64_t> parse_rate_or_unlimited(std::string_view text);

// Units: ns, us, ms, s, min, h; a bare number is refused (no unit to guess).
Result<std::chrono::nanoseconds> parse_duration(std::string_view text);

// A whole number from `min` to `max`, digits only.
Result<uint64_t> parse_count(std::string_view text, uint64_t min, uint64_t max);

// "4.00 MiB", "512 B".
std::string format_size(uint64_t bytes);
// "120.5 MiB/s".
std::string format_rate(double bytes_per_s);
// "7 s", "3:07", "1:02:03".
std::string format_duration(std::chrono::seconds duration);
// A time as RFC 3339 in UTC, "2026-12-07T21:30:00Z"; "" for 0 (none).
std::string rfc3339(int64_t unix_seconds);
// RFC 3339's date-time, "2026-12-07T21:30:00Z" or with an offset ("+01:00"), to
// seconds since the epoch; a fraction of a second is dropped.
Result<int64_t> parse_rfc3339(std::string_view text);
// The wall clock, in seconds since the epoch: whole, and with their fraction.
int64_t now_unix();
double wall_seconds();
// A latency in milliseconds, "1.25 ms" (`decimals` after the point).
std::string format_ms(double seconds, int decimals = 2);
// A ratio, "12.5x" (`decimals` after the point).
std::string format_ratio(double ratio, int decimals = 1);
// "[#######-------]": `width` marks between the brackets.
std::string progress_bar(double ratio, int width);

} // namespace prewarmd
