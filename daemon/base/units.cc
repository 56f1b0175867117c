#include "base/units.hh"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <optional>

namespace prewarmd {
namespace {

__extension__ using uint128 = unsigned __int128;

struct Unit {
    std::string_view name;
    uint64_t factor;
};

constexpr uint64_t Ki = 1024;
constexpr std::array size_units{
    Unit{"", 1},
    Unit{"b", 1},
    Unit{"k", Ki},
    Unit{"kib", Ki},
    Unit{"kb", 1000},
    Unit{"m", Ki* Ki},
    Unit{"mib", Ki* Ki},
    Unit{"mb", 1000 * 1000},
    Unit{"g", Ki* Ki* Ki},
    Unit{"gib", Ki* Ki* Ki},
    Unit{"gb", 1000 * 1000 * 1000},
    Unit{"t", Ki* Ki* Ki* Ki},
    Unit{"tib", Ki* Ki* Ki* Ki},
    Unit{"tb", 1000ULL * 1000 * 1000 * 1000},
    Unit{"p", Ki* Ki* Ki* Ki* Ki},
    Unit{"pib", Ki* Ki* Ki* Ki* Ki},
    Unit{"pb", 1000ULL * 1000 * 1000 * 1000 * 1000},
};

constexpr std::array duration_units{
    Unit{"ns", 1},
    Unit{"us", 1000},
    Unit{"ms", 1000 * 1000},
    Unit{"s", 1000 * 1000 * 1000},
    Unit{"min", 60ULL * 1000 * 1000 * 1000},
    Unit{"h", 3600ULL * 1000 * 1000 * 1000},
};

std::string lower(std::string_view text) {
    std::string out(text);
    for (auto& c : out)
        if (c >= 'A' && c <= 'Z')
            c = static_cast<char>(c - 'A' + 'a');
    return out;
}

std::string_view trim(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
        text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t'))
        text.remove_suffix(1);
    return text;
}

struct Number {
    uint64_t whole = 0;
    uint64_t frac_num = 0; // fraction = frac_num / frac_den
    uint64_t frac_den = 1;
    std::string_view rest;
};

// Digits, optionally '.' and digits; no sign, no exponent.
std::optional<Number> parse_number(std::string_view text) {
    Number n;
    size_t i = 0;
    bool digits = false;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
        const uint64_t d = static_cast<uint64_t>(text[i] - '0');
        if (n.whole > (std::numeric_limits<uint64_t>::max() - d) / 10)
            return std::nullopt;
        n.whole = n.whole * 10 + d;
        digits = true;
    }
    if (i < text.size() && text[i] == '.') {
        ++i;
        for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
            if (n.frac_den > std::numeric_limits<uint64_t>::max() / 100)
                return std::nullopt; // more fractional digits than anyone means
            n.frac_num = n.frac_num * 10 + static_cast<uint64_t>(text[i] - '0');
            n.frac_den *= 10;
            digits = true;
        }
    }
    if (!digits)
        return std::nullopt;
    n.rest = text.substr(i);
    return n;
}

template <size_t N>
Result<uint64_t> scaled(std::string_view original, const std::array<Unit, N>& units,
                        std::string_view kind, std::string_view example) {
    const auto text = trim(original);
    const auto invalid = [&] {
        return Error{-EINVAL, "invalid " + std::string(kind) + " '" + std::string(original) +
                                  "': expected a number with a unit, such as " +
                                  std::string(example)};
    };
    const auto number = parse_number(text);
    if (!number)
        return invalid();
    const auto unit_name = lower(trim(number->rest));
    for (const auto& unit : units) {
        if (unit.name != unit_name)
            continue;
        const auto max = std::numeric_limits<uint64_t>::max();
        if (number->whole > max / unit.factor)
            return Error{-ERANGE,
                         std::string(kind) + " '" + std::string(original) + "' is too large"};
        const uint64_t whole = number->whole * unit.factor;
        // frac_num < frac_den <= 10^18 and factor <= 2^50: compute exactly in 128 bits.
        const auto frac = static_cast<uint128>(number->frac_num) * unit.factor;
        if (frac % number->frac_den != 0)
            return Error{-EINVAL, std::string(kind) + " '" + std::string(original) +
                                      "' is not a whole number of " +
                                      (kind == "duration" ? "nanoseconds" : "bytes")};
        const auto frac_part = static_cast<uint64_t>(frac / number->frac_den);
        if (whole > max - frac_part)
            return Error{-ERANGE,
                         std::string(kind) + " '" + std::string(original) + "' is too large"};
        return whole + frac_part;
    }
    return invalid();
}

std::string format_scaled(double value, std::string_view suffix) {
    static constexpr std::array<std::string_view, 6> prefixes{"", "Ki", "Mi", "Gi", "Ti", "Pi"};
    size_t i = 0;
    while (value >= 1024.0 && i + 1 < prefixes.size()) {
        value /= 1024.0;
        ++i;
    }
    char buf[64];
    if (i == 0)
        std::snprintf(buf, sizeof buf, "%.0f B%s", value, std::string(suffix).c_str());
    else
        std::snprintf(buf, sizeof buf, "%.*f %sB%s", value < 10 ? 2 : 1, value,
                      std::string(prefixes[i]).c_str(), std::string(suffix).c_str());
    return buf;
}

} // namespace

Result<uint64_t> parse_size(std::string_view text) {
    return scaled(text, size_units, "size", "4MiB");
}

Result<uint64_t> parse_rate(std::string_view text) {
    auto body = trim(text);
    if (body.size() < 2 || lower(body.substr(body.size() - 2)) != "/s")
        return Error{-EINVAL, "invalid rate '" + std::string(text) +
                                  "': expected a size per second, such as 100MiB/s"};
    body.remove_suffix(2);
    auto bytes = scaled(body, size_units, "rate", "100MiB/s");
    if (!bytes)
        return Error{bytes.error().err, "invalid rate '" + std::string(text) +
                                            "': expected a size per second, such as 100MiB/s"};
    return bytes;
}

Result<uint64_t> parse_rate_or_unlimited(std::string_view text) {
    if (trim(text) == "unlimited")
        return uint64_t{0};
    return parse_rate(text);
}

Result<std::chrono::nanoseconds> parse_duration(std::string_view text) {
    const auto number = parse_number(trim(text));
    if (number && trim(number->rest).empty())
        return Error{-EINVAL, "invalid duration '" + std::string(text) +
                                  "': a unit is needed (ns, us, ms, s, min, h), such as 2ms"};
    auto ns = scaled(text, duration_units, "duration", "2ms");
    if (!ns)
        return ns.error();
    if (*ns > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return Error{-ERANGE, "duration '" + std::string(text) + "' is too large"};
    return std::chrono::nanoseconds(static_cast<int64_t>(*ns));
}

Result<uint64_t> parse_count(std::string_view text, uint64_t min, uint64_t max) {
    uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size() || value < min || value > max)
        return Error{-EINVAL, "expected a whole number from " + std::to_string(min) + " to " +
                                  std::to_string(max) + ", got '" + std::string(text) + "'"};
    return value;
}

std::string format_size(uint64_t bytes) {
    return format_scaled(static_cast<double>(bytes), "");
}

std::string format_rate(double bytes_per_s) {
    return format_scaled(bytes_per_s, "/s");
}

std::string format_ms(double seconds, int decimals) {
    char text[32];
    std::snprintf(text, sizeof text, "%.*f ms", decimals, seconds * 1000);
    return text;
}

std::string format_ratio(double ratio, int decimals) {
    char text[32];
    std::snprintf(text, sizeof text, "%.*fx", decimals, ratio);
    return text;
}

std::string rfc3339(int64_t unix_seconds) {
    if (unix_seconds == 0)
        return {};
    const auto t = static_cast<std::time_t>(unix_seconds);
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return text;
}

Result<int64_t> parse_rfc3339(std::string_view text) {
    const Error bad{-EINVAL, "expected an RFC 3339 time such as 2026-12-07T21:30:00Z, not '" +
                                 std::string(text) + "'"};
    const auto number = [&](size_t at, size_t digits, int& out) {
        if (at + digits > text.size())
            return false;
        const auto r = std::from_chars(text.data() + at, text.data() + at + digits, out);
        return r.ec == std::errc() && r.ptr == text.data() + at + digits;
    };
    int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
    if (text.size() < 20 || !number(0, 4, year) || text[4] != '-' || !number(5, 2, month) ||
        text[7] != '-' || !number(8, 2, day) || (text[10] != 'T' && text[10] != 't') ||
        !number(11, 2, hour) || text[13] != ':' || !number(14, 2, minute) || text[16] != ':' ||
        !number(17, 2, second))
        return bad;
    size_t at = 19;
    if (text[at] == '.') {
        ++at;
        const size_t digits = at;
        while (at < text.size() && text[at] >= '0' && text[at] <= '9')
            ++at;
        if (at == digits)
            return bad;
    }
    int offset_s = 0;
    const auto zone = text.substr(at);
    if (zone == "Z" || zone == "z") {
    } else if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':') {
        int oh = 0, om = 0;
        if (!number(at + 1, 2, oh) || !number(at + 4, 2, om) || oh > 23 || om > 59)
            return bad;
        offset_s = (zone[0] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
    } else {
        return bad;
    }
    if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60)
        return bad;
    std::tm tm{};
    tm.tm_year = year - 1900;
    tm.tm_mon = month - 1;
    tm.tm_mday = day;
    tm.tm_hour = hour;
    tm.tm_min = minute;
    tm.tm_sec = second;
    const std::time_t t = ::timegm(&tm);
    if (tm.tm_mday != day) // 31 April, 29 February of a common year
        return bad;
    return static_cast<int64_t>(t) - offset_s;
}

int64_t now_unix() {
    return static_cast<int64_t>(std::time(nullptr));
}

double wall_seconds() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string format_duration(std::chrono::seconds duration) {
    const auto total = duration.count();
    char buf[32];
    if (total < 60)
        std::snprintf(buf, sizeof buf, "%lld s", static_cast<long long>(total));
    else if (total < 3600)
        std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(total / 60),
                      static_cast<long long>(total % 60));
    else
        std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(total / 3600),
                      static_cast<long long>(total / 60 % 60), static_cast<long long>(total % 60));
    return buf;
}

std::string progress_bar(double ratio, int width) {
    const int filled = static_cast<int>(std::clamp(ratio, 0.0, 1.0) * width + 0.5);
    return "[" + std::string(static_cast<size_t>(filled), '#') +
           std::string(static_cast<size_t>(width - filled), '-') + "]";
}

} // namespace prewarmd
