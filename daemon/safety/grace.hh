// The attach grace: a disk just attached is watched for a while (inotify on its
// node) before it may be warmed by itself. An open by another process (udev's own
// probing aside), a close after writing, or any sector written marks it in use:
// cloud-init or an admin may be formatting it, and our exclusive open would make
// their mkfs fail.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.hh"
#include "base/result.hh"
#include "base/unique_fd.hh"

namespace prewarmd {

class AttachGrace {
public:
    struct Outcome {
        std::string key;
        bool in_use = false;
        std::string why; // "opened by mkfs.ext4 (pid 812)", "quiet for 30 s", ...
    };

    static Result<AttachGrace> create();
    int fd() const { return m_inotify.get(); } // readable: call on_readable()

    // Starts watching `devnode` (the disk with `devnum`) until `until`.
    Result<void> watch(const std::string& key, const std::string& devnode, dev_t devnum,
                       Clock::time_point until);
    // Watches it until nobody has opened, held or written it for `quiet`; its one
    // outcome says so (never in use: each use starts the wait over).
    Result<void> watch_until_quiet(const std::string& key, const std::string& devnode, dev_t devnum,
                                   std::chrono::milliseconds quiet);
    void forget(const std::string& key);
    void on_readable();
    // The disks whose grace ended by `now`, each decided once; a disk seen in use
    // is decided at once.
    std::vector<Outcome> take_decided(Clock::time_point now);
    std::optional<Clock::time_point> next_deadline() const;

private:
    struct Watched {
        std::string key;
        std::string devnode;
        dev_t devnum = 0;
        int wd = -1;
        Clock::time_point started;
        Clock::time_point until;
        std::optional<uint64_t> sectors_written;
        std::string in_use; // why, once seen
        // until_quiet: a use moves `until` on by this much, instead of deciding.
        std::optional<std::chrono::milliseconds> quiet;
    };
    static void check_openers(Watched& w);

    UniqueFd m_inotify;
    std::map<int, Watched> m_watched; // by watch descriptor
};

} // namespace prewarmd
