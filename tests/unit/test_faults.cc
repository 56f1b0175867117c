#include <doctest/doctest.h>

#include "faults.hh"

using namespace cowsim;
using namespace std::chrono_literals;

TEST_CASE("control commands parse") {
    const auto r = parse_control("# comment\n"
                                 "fail write xvdb range=1MiB+4KiB errno=enospc\n"
                                 "\n"
                                 "fail read * after=8MiB\n"
                                 "delay any xvdc 5ms range=0-1GiB\n"
                                 "clear\n"
                                 "vanish xvdb   # gone\n"
                                 "appear xvdb\n"
                                 "capacity 10GiB\n"
                                 "capacity unlimited\n");
    REQUIRE(r.ok());
    REQUIRE(r->size() == 8);

    const auto& fail = std::get<FaultCommand>((*r)[0]);
    CHECK(fail.disk == "xvdb");
    CHECK(fail.rule.op == OpKind::write);
    CHECK(fail.rule.range.begin == 1024 * 1024);
    CHECK(fail.rule.range.end == 1024 * 1024 + 4096);
    CHECK(fail.rule.err == ENOSPC);

    const auto& after = std::get<FaultCommand>((*r)[1]);
    CHECK(after.disk == "*");
    CHECK(after.rule.err == EIO);
    CHECK(after.rule.after_bytes == 8 * 1024 * 1024);

    const auto& delay = std::get<FaultCommand>((*r)[2]);
    CHECK(delay.rule.err == 0);
    CHECK(delay.rule.delay == 5ms);
    CHECK(delay.rule.range.end == 1ULL << 30);

    CHECK(std::get<ClearCommand>((*r)[3]).disk == "*");
    CHECK_FALSE(std::get<PresenceCommand>((*r)[4]).present);
    CHECK(std::get<PresenceCommand>((*r)[5]).present);
    CHECK(std::get<CapacityCommand>((*r)[6]).bytes == 10ULL << 30);
    CHECK(std::get<CapacityCommand>((*r)[7]).bytes == 0);
}

TEST_CASE("a bad control line names its line and applies nothing") {
    for (const auto* text :
         {"fail write", "fail sideways xvdb", "fail write xvdb range=5-2",
          "fail write xvdb errno=ewhat", "delay write xvdb", "delay write xvdb 5", "capacity 0",
          "vanish", "explode xvdb", "fail write xvdb colour=red"}) {
        CAPTURE(text);
        const auto r = parse_control(std::string("clear\n") + text + "\n");
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().err == -EINVAL);
        CHECK(r.error().message.rfind("line 2: ", 0) == 0);
    }
}

TEST_CASE("fault rules match by operation and range") {
    FaultSet faults;
    FaultRule rule;
    rule.op = OpKind::write;
    rule.range = {4096, 8192};
    rule.err = EIO;
    faults.add(rule);

    CHECK(faults.check(OpKind::write, 0, 4096).err == 0);
    CHECK(faults.check(OpKind::write, 8192, 4096).err == 0);
    CHECK(faults.check(OpKind::write, 4096, 512).err == EIO);
    CHECK(faults.check(OpKind::write, 0, 1 << 20).err == EIO); // covers the range
    CHECK(faults.check(OpKind::read, 4096, 512).err == 0);

    faults.clear();
    CHECK(faults.check(OpKind::write, 4096, 512).err == 0);
}

TEST_CASE("an after= rule arms once that many bytes were served") {
    FaultSet faults;
    FaultRule rule;
    rule.op = OpKind::read;
    rule.after_bytes = 3 * 4096;
    rule.err = ENODEV;
    faults.add(rule);
    for (int i = 0; i < 3; ++i)
        CHECK(faults.check(OpKind::read, static_cast<uint64_t>(i) * 4096, 4096).err == 0);
    CHECK(faults.check(OpKind::write, 0, 4096).err == 0); // writes do not count
    CHECK(faults.check(OpKind::read, 3 * 4096, 4096).err == ENODEV);
    CHECK(faults.check(OpKind::read, 0, 4096).err == ENODEV);
}

TEST_CASE("delays add up to the largest matching one and do not fail") {
    FaultSet faults;
    FaultRule slow;
    slow.delay = 3ms;
    faults.add(slow);
    slow.delay = 7ms;
    slow.op = OpKind::read;
    faults.add(slow);
    const auto write = faults.check(OpKind::write, 0, 512);
    CHECK(write.err == 0);
    CHECK(write.delay == 3ms);
    CHECK(faults.check(OpKind::read, 0, 512).delay == 7ms);
}
