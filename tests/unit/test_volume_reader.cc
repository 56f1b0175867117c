// A Xen disk's volume is read off the event loop, in turn, and a disk waits for
// it only so long.
#include <doctest/doctest.h>

#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>
#include <vector>

#include "discovery/volume_reader.hh"

using namespace prewarmd;
using namespace std::chrono_literals;

namespace {

// What the reader posts, run here on the test's thread as the loop would.
class Posted {
public:
    VolumeReader::Post post() {
        return [this](std::function<void()> work) {
            std::lock_guard lock(m_mutex);
            m_work.push_back(std::move(work));
            m_wake.notify_all();
        };
    }
    // Runs the first `count` posted, once they are there.
    void run(size_t count) {
        std::unique_lock lock(m_mutex);
        REQUIRE(m_wake.wait_for(lock, 30s, [&] { return m_work.size() >= count; }));
        auto work = std::move(m_work);
        m_work.clear();
        lock.unlock();
        for (auto& w : work)
            w();
    }

private:
    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::vector<std::function<void()>> m_work;
};

DiskInfo disk(const std::string& name) {
    DiskInfo d;
    d.name = name;
    d.devpath = "/devices/vbd-" + name + "/block/" + name;
    return d;
}

} // namespace

TEST_CASE("a disk's read does not wait for xenstore, and the volumes come back in order") {
    std::promise<void> xenstore_answers;
    auto answers = xenstore_answers.get_future().share();
    Posted posted;
    VolumeReader reader(
        [answers](const DiskInfo& d) {
            answers.wait(); // xenstore is slow
            return "vdi-of-" + d.name;
        },
        posted.post(), 1h);

    std::vector<std::string> got;
    for (const auto* name : {"xvdb", "xvdc", "xvdd"})
        reader.read(disk(name), [&](DiskInfo d) { got.push_back(d.name + "=" + d.volume); });
    CHECK(got.empty()); // every read() returned while the first was still reading

    xenstore_answers.set_value();
    posted.run(3);
    CHECK(got == std::vector<std::string>{"xvdb=vdi-of-xvdb", "xvdc=vdi-of-xvdc",
                                          "xvdd=vdi-of-xvdd"});
}

TEST_CASE("a disk whose time is up goes on with its volume unknown, unread") {
    Posted posted;
    int reads = 0;
    VolumeReader reader(
        [&](const DiskInfo&) {
            ++reads;
            return std::string("vdi");
        },
        posted.post(), 0ms);
    std::optional<DiskInfo> got;
    reader.read(disk("xvdb"), [&](DiskInfo d) { got = std::move(d); });
    posted.run(1);
    REQUIRE(got);
    CHECK(got->name == "xvdb");
    CHECK(got->volume.empty());
    CHECK(reads == 0);
}
