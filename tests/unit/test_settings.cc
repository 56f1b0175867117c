// A setting that the file, the API, D-Bus and prewarmctl all take is one Field
// (control/schema.hh): the file reads it through the Field's kind and range, and
// api/openapi.yaml states the same range and words.
#include <doctest/doctest.h>

#include <regex>
#include <set>

#include "base/units.hh"
#include "config/config.hh"
#include "control/schema.hh"
#include "source_file.hh"

using namespace prewarmd;

namespace {

// What the file says of the value for this key: "" when the Field takes it (the
// buffer budget may still refuse 64 jobs of 8 chunks: that is not the key's error).
std::string file_error(const Field& f, const std::string& toml_value) {
    const auto c = parse_config("[" + std::string(f.section) + "]\n" + std::string(f.file_key) +
                                    " = " + toml_value + "\n",
                                "x.toml");
    const auto key = "] " + std::string(f.file_key) + ": ";
    if (c.ok() || c.error().message.find(key) == std::string::npos)
        return "";
    return c.error().message;
}

// The text of `name:` at `indent` spaces, up to the next key at that indent.
std::string block(const std::string& text, const std::string& name, size_t indent) {
    const std::string head = "\n" + std::string(indent, ' ') + name + ":";
    const auto begin = text.find(head);
    if (begin == std::string::npos)
        return "";
    const std::regex next("\n {" + std::to_string(indent) + "}[A-Za-z_]+:");
    std::smatch m;
    const auto rest = text.substr(begin + head.size());
    return std::regex_search(rest, m, next) ? rest.substr(0, m.position(0)) : rest;
}

std::optional<uint64_t> number_after(const std::string& text, const std::string& word) {
    std::smatch m;
    if (!std::regex_search(text, m, std::regex(word + R"(: (\d+))")))
        return std::nullopt;
    return std::stoull(m[1].str());
}

std::set<std::string> property_names(const std::string& schema) {
    std::set<std::string> out;
    const auto props = block(schema, "properties", 6);
    const std::regex key(R"(\n {8}([a-z_]+):)");
    for (auto it = std::sregex_iterator(props.begin(), props.end(), key);
         it != std::sregex_iterator(); ++it)
        out.insert((*it)[1].str());
    return out;
}

// The schema's properties are the fields, each with the fields' range or words.
void same_as_fields(const std::string& spec, const std::string& schema_name,
                    std::span<const Field> fields) {
    CAPTURE(schema_name);
    const auto schema = block(spec, schema_name, 4);
    REQUIRE_FALSE(schema.empty());
    std::set<std::string> keys;
    for (const auto& f : fields)
        keys.emplace(f.key);
    CHECK(property_names(schema) == keys);
    const auto props = block(schema, "properties", 6);
    for (const auto& f : fields) {
        CAPTURE(f.key);
        const auto p = block(props, std::string(f.key), 8);
        if (f.kind == Field::Kind::instant) {
            CHECK(p.find("format: date-time") != std::string::npos);
            continue;
        }
        if (f.kind == Field::Kind::choice) {
            std::string words;
            for (const auto& c : f.choices)
                words += (words.empty() ? "" : ", ") + std::string(c);
            CHECK(p.find("enum: [" + words + "]") != std::string::npos);
            continue;
        }
        CHECK(number_after(p, "minimum") == f.min);
        CHECK(number_after(p, "maximum") == f.max);
    }
}

} // namespace

TEST_CASE("the file reads each shared setting through its Field: one range, one set of words") {
    size_t in_file = 0;
    for (const auto fields : {start_fields(), setting_fields()})
        for (const auto& f : fields) {
            if (f.section.empty())
                continue;
            CAPTURE(f.key);
            ++in_file;
            switch (f.kind) {
            case Field::Kind::count:
                CHECK(file_error(f, std::to_string(f.max)) == "");
                CHECK(file_error(f, std::to_string(f.max + 1)).find(
                          "expected a whole number from " + std::to_string(f.min) + " to " +
                          std::to_string(f.max)) != std::string::npos);
                CHECK(file_error(f, std::to_string(f.min) + " ") == "");
                CHECK_FALSE(file_error(f, f.min ? std::to_string(f.min - 1) : "-1").empty());
                break;
            case Field::Kind::rate:
                CHECK(file_error(f, "\"unlimited\"") == "");
                CHECK(file_error(f, "\"0B/s\"") == "");
                CHECK(file_error(f, "\"" + std::to_string(f.max) + "B/s\"") == "");
                CHECK(file_error(f, "\"" + std::to_string(f.max + 1) + "B/s\"").find("at most") !=
                      std::string::npos);
                break;
            case Field::Kind::duration:
                CHECK(file_error(f, "\"" + std::string(f.example) + "\"") == "");
                CHECK(file_error(f, "\"0s\"").find("expected a duration") != std::string::npos);
                break;
            case Field::Kind::instant:
                FAIL("an instant is no setting of the file: it is never the same time twice");
                break;
            case Field::Kind::choice:
                for (const auto& c : f.choices)
                    CHECK(file_error(f, "\"" + std::string(c) + "\"") == "");
                CHECK(file_error(f, "\"no-such-word\"").find("expected one of") !=
                      std::string::npos);
                break;
            }
        }
    CHECK(in_file == 5); // mode, queue_depth, total_rate, max_parallel, auto_prefill
}

TEST_CASE("api/openapi.yaml's start and settings schemas are the Fields") {
    const auto spec = source_file("api/openapi.yaml");
    REQUIRE_FALSE(spec.empty());
    same_as_fields(spec, "StartRequest", start_fields());
    same_as_fields(spec, "SettingsPatch", setting_fields());
}

TEST_CASE("the D-Bus interface's writable properties are the settings' Fields") {
    const auto xml = source_file("api/org.prewarmd.Prewarmd1.xml");
    REQUIRE_FALSE(xml.empty());
    std::set<std::string> writable, fields;
    const std::regex property(R"re(<property name="(\w+)" type="(\w+)" access="readwrite"/>)re");
    for (auto it = std::sregex_iterator(xml.begin(), xml.end(), property);
         it != std::sregex_iterator(); ++it)
        writable.insert((*it)[1].str() + " " + (*it)[2].str());
    for (const auto& f : setting_fields())
        fields.insert(std::string(f.property) + " " + std::string(f.dbus_type));
    CHECK(writable == fields);
}

TEST_CASE("an option's help comes from its Field: its words, range or example") {
    CHECK(field_help(*field_by_key(start_fields(), "mode")) ==
          "what the job does: zero, rewrite or read");
    CHECK(field_help(*field_by_key(start_fields(), "queue_depth")) == "chunks in flight, 1 to 64");
    CHECK(field_help(*field_by_key(start_fields(), "rate_bytes_per_s")) ==
          "its own rate, outside the shared one, e.g. 50MiB/s or unlimited");
    CHECK(field_help(*field_by_key(start_fields(), "within_s")) ==
          "warm within this long from now, paced to end then, e.g. 30min, at most 168:00:00");
}

TEST_CASE("a deadline as a time: RFC 3339, from a second to a week from now") {
    const auto& at = *field_by_cli(start_fields(), "deadline");
    CHECK(at.key == "deadline");
    const int64_t now = now_unix();
    const auto in_hour = rfc3339(now + 3600);
    auto taken = check_value(at, in_hour);
    REQUIRE(taken.ok());
    CHECK(std::get<uint64_t>(*taken) == static_cast<uint64_t>(now + 3600));
    CHECK(std::get<uint64_t>(*parse_field_text(at, in_hour)) == static_cast<uint64_t>(now + 3600));
    CHECK(check_value(at, rfc3339(now - 10)).error().message.find("is from 1 s to") !=
          std::string::npos); // passed
    CHECK_FALSE(check_value(at, rfc3339(now + 8 * 24 * 3600)).ok());
    CHECK(check_value(at, uint64_t{1}).error().message == "deadline is a string");
    CHECK(check_value(at, std::string("tomorrow")).error().message.find("RFC 3339") !=
          std::string::npos);
}

TEST_CASE("RFC 3339 times: Z or an offset, a fraction dropped") {
    CHECK(*parse_rfc3339("1970-01-01T00:00:00Z") == 0);
    CHECK(*parse_rfc3339("2026-12-08T12:00:00Z") == 1796731200);
    CHECK(*parse_rfc3339("2026-12-08t12:00:00.75z") == 1796731200);
    CHECK(*parse_rfc3339("2026-12-08T13:30:00+01:30") == 1796731200);
    CHECK(*parse_rfc3339("2026-12-08T10:00:00-02:00") == 1796731200);
    CHECK(rfc3339(*parse_rfc3339("2028-02-29T23:59:59Z")) == "2028-02-29T23:59:59Z");
    for (const char* bad :
         {"", "2026-12-08", "2026-12-08T12:00:00", "2026-12-08 12:00:00Z", "2026-13-08T12:00:00Z",
          "2026-02-30T12:00:00Z", "2026-12-08T24:00:00Z", "2026-12-08T12:00:00+0100",
          "2026-12-08T12:00:00.Z", "2026-12-08T12:00:00Zjunk"})
        CHECK_MESSAGE(!parse_rfc3339(bad).ok(), bad);
}

TEST_CASE("a deadline's words: a duration to whole seconds, rounded up, up to a week") {
    const auto& by = *field_by_cli(start_fields(), "by");
    CHECK(by.key == "within_s");
    CHECK(std::get<uint64_t>(*parse_field_text(by, "30min")) == 1800);
    CHECK(std::get<uint64_t>(*parse_field_text(by, "2h")) == 7200);
    CHECK(std::get<uint64_t>(*parse_field_text(by, "1500ms")) == 2);
    CHECK_FALSE(parse_field_text(by, "0s").ok());
    CHECK_FALSE(parse_field_text(by, "1800").ok()); // a unit is needed
    CHECK_FALSE(parse_field_text(by, "169h").ok());
    CHECK(check_value(by, uint64_t{604800}).ok());
    CHECK(check_value(by, uint64_t{604801}).error().message ==
          "within_s is from 1 to 604800 seconds");
}
