#include <doctest/doctest.h>

#include "base/units.hh"

using namespace prewarmd;
using namespace std::chrono_literals;

TEST_CASE("sizes take IEC, SI and single-letter binary units") {
    CHECK(*parse_size("0") == 0);
    CHECK(*parse_size("4096") == 4096);
    CHECK(*parse_size("512B") == 512);
    CHECK(*parse_size("4KiB") == 4096);
    CHECK(*parse_size("4k") == 4096);
    CHECK(*parse_size("4kB") == 4000);
    CHECK(*parse_size("2MiB") == 2 * 1024 * 1024);
    CHECK(*parse_size("2 MiB") == 2 * 1024 * 1024);
    CHECK(*parse_size("1.5GiB") == 1536ULL * 1024 * 1024);
    CHECK(*parse_size("1TiB") == 1ULL << 40);
    CHECK(*parse_size("1T") == 1ULL << 40);
    CHECK_FALSE(parse_size("8EiB").ok());
}

TEST_CASE("bad sizes are refused with a message") {
    for (const auto* text : {"", "MiB", "4XiB", "-1", "1.5", "0.1KiB", "4 Mi B", "1e3"}) {
        CAPTURE(text);
        const auto r = parse_size(text);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().err < 0);
        CHECK_FALSE(r.error().message.empty());
    }
    CHECK(parse_size("99999999999999999999").error().err == -EINVAL);
    CHECK(parse_size("16777216TiB").error().err == -ERANGE);
}

TEST_CASE("rates are sizes per second") {
    CHECK(*parse_rate("100MiB/s") == 100ULL * 1024 * 1024);
    CHECK(*parse_rate("1GB/s") == 1000ULL * 1000 * 1000);
    CHECK_FALSE(parse_rate("100MiB").ok());
    CHECK_FALSE(parse_rate("/s").ok());
}

TEST_CASE("durations need a unit") {
    CHECK(*parse_duration("2ms") == 2ms);
    CHECK(*parse_duration("500us") == 500us);
    CHECK(*parse_duration("1.5s") == 1500ms);
    CHECK(*parse_duration("1min") == 60s);
    CHECK(*parse_duration("0ns") == 0ns);
    CHECK(parse_duration("5").error().message.find("unit") != std::string::npos);
    CHECK(*parse_duration("2h") == 7200s);
    CHECK_FALSE(parse_duration("5d").ok());
}

TEST_CASE("sizes and rates print in IEC units") {
    CHECK(format_size(512) == "512 B");
    CHECK(format_size(4096) == "4.00 KiB");
    CHECK(format_size(2 * 1024 * 1024) == "2.00 MiB");
    CHECK(format_size(100ULL * 1024 * 1024) == "100.0 MiB");
    CHECK(format_rate(1024.0 * 1024 * 120.5) == "120.5 MiB/s");
}
