#include <doctest/doctest.h>

#include <cerrno>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "control/refusal.hh"
#include "scheduler/disk_state.hh"
#include "source_file.hh"

using namespace prewarmd;

namespace {

std::set<std::string> table_slugs() {
    std::set<std::string> out;
    for (const auto& r : refusal_table())
        out.emplace(r.slug);
    return out;
}

// Each match's first group.
std::set<std::string> matches(const std::string& text, const std::string& pattern) {
    std::set<std::string> out;
    const std::regex re(pattern);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
         ++it)
        out.insert((*it)[1].str());
    return out;
}

} // namespace

TEST_CASE("every refusal has one row, a slug of its own and an error status") {
    std::set<std::string> slugs;
    for (const auto& r : refusal_table()) {
        CAPTURE(r.slug);
        CHECK(&row_of(r.refusal) == &r);
        CHECK(slugs.insert(std::string(r.slug)).second);
        CHECK(r.http_status >= 400);
        CHECK(r.http_status <= 599);
        CHECK_FALSE(r.title.empty());
        CHECK(r.ctl_exit >= ctl_exit::failed);
        CHECK(r.ctl_exit <= ctl_exit::refused);
        if (r.err) // a command's refusal: said over D-Bus too, and carried back
            CHECK(refusal_of(refuse(r.refusal, "why")) == r.refusal);
    }
}

TEST_CASE("a command's error of no refusal's errno is internal, over HTTP and D-Bus alike") {
    CHECK(refusal_of(Error{-EIO, "disk gone"}) == Refusal::internal);
    CHECK(row_of(Refusal::internal).http_status == 500);
    CHECK(row_of(Refusal::internal).dbus_error == "org.prewarmd.Prewarmd1.Error.Failed");
    // A cancel that could not be recorded: 507 over HTTP, its own name over D-Bus.
    CHECK(refusal_of(Error{-ENOSPC, "no room"}) == Refusal::not_recorded);
    CHECK(row_of(Refusal::not_recorded).dbus_error == "org.prewarmd.Prewarmd1.Error.NotRecorded");
}

TEST_CASE("prewarmctl's exit status: by the problem type, else by the status") {
    CHECK(ctl_exit_for(404, "urn:prewarmd:problem:unknown-disk") == ctl_exit::unknown_disk);
    CHECK(ctl_exit_for(404, "urn:prewarmd:problem:no-route") == ctl_exit::failed);
    CHECK(ctl_exit_for(409, "urn:prewarmd:problem:wrong-state") == ctl_exit::refused);
    CHECK(ctl_exit_for(403, "urn:prewarmd:problem:cross-origin") == ctl_exit::unauthorized);
    CHECK(ctl_exit_for(401, "") == ctl_exit::unauthorized);
    CHECK(ctl_exit_for(409, "urn:other:thing") == ctl_exit::refused);
    CHECK(ctl_exit_for(413, "") == ctl_exit::usage);
    CHECK(ctl_exit_for(599, "") == ctl_exit::failed);
}

TEST_CASE("api/openapi.yaml and docs/api.md list exactly the refusals of the table") {
    const auto spec = source_file("api/openapi.yaml");
    REQUIRE_FALSE(spec.empty());
    CHECK(matches(spec, R"(- urn:prewarmd:problem:([a-z-]+))") == table_slugs());

    const auto doc = source_file("docs/api.md");
    const auto begin = doc.find("## Problems");
    REQUIRE(begin != std::string::npos);
    const auto section = doc.substr(begin, doc.find("\n## ", begin + 1) - begin);
    CHECK(matches(section, R"(\n\| `([a-z-]+)` \|)") == table_slugs());
}

TEST_CASE("the outcomes: a disk state and a job status each, 0 only for warm") {
    CHECK(outcome_exit("warm") == ctl_exit::ok);
    CHECK(outcome_exit("unproven") == ctl_exit::unproven);
    CHECK(outcome_exit("not_warmable") == ctl_exit::not_warmable);
    CHECK_FALSE(outcome_exit("failed"));
    CHECK_FALSE(outcome_exit("visited")); // the engine's end, before the proof
    for (const auto& o : outcome_table()) {
        CAPTURE(o.name);
        const auto state = parse_disk_state(o.name);
        REQUIRE(state);
        CHECK(is_finished(*state));
        CHECK(to_string(*state) == o.name);
    }
}
