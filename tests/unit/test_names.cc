// One name table per enum (base/names.hh): each name read back as its enumerator,
// and the choices the control schema offers are the same names.
#include <doctest/doctest.h>

#include "config/config.hh"
#include "control/schema.hh"
#include "discovery/tracker.hh"
#include "engine/job.hh"
#include "measurement/probe.hh"
#include "safety/classify.hh"
#include "scheduler/disk_state.hh"

using namespace prewarmd;

namespace {

template <typename E>
void round_trips() {
    for (const auto& n : names_of(E{})) {
        CHECK(to_string(n.value) == n.name);
        CHECK(parse_name<E>(n.name) == n.value);
    }
    CHECK_FALSE(parse_name<E>("no such name").has_value());
}

} // namespace

TEST_CASE("every enum's names read back as its enumerators") {
    round_trips<Mode>();
    round_trips<Strategy>();
    round_trips<AutoPrefill>();
    round_trips<IoEngineKind>();
    round_trips<JobStatus>();
    round_trips<DiskState>();
    round_trips<Verdict>();
    round_trips<Allocation>();
    round_trips<ZeroWrites>();
    round_trips<PrefillJob::Phase>();
    round_trips<DiskTracker::Event>();
    CHECK(to_string(JobStatus::stepped_aside) == "stepped-aside");
    CHECK(to_string(Verdict::needs_request) == "needs-request");
    CHECK(names_text<Mode>() == "zero, rewrite or read");
    CHECK(names_text<Strategy>(" and ") == "auto, full and sparse");
}

TEST_CASE("the choices the API and prewarmctl offer are the enums' names") {
    const auto names = [](auto table) {
        std::vector<std::string_view> out;
        for (const auto& n : table)
            out.push_back(n.name);
        return out;
    };
    const auto choices = [](std::span<const Field> fields, std::string_view key) {
        const auto* f = field_by_key(fields, key);
        REQUIRE(f);
        return std::vector<std::string_view>(f->choices.begin(), f->choices.end());
    };
    CHECK(choices(start_fields(), "mode") == names(mode_names));
    CHECK(choices(setting_fields(), "auto_prefill") == names(auto_prefill_names));
}
