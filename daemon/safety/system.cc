#include "safety/system.hh"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/sysfs.hh"

namespace prewarmd {
namespace {

std::vector<std::string> list_dir(const std::string& path) {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(path, ec))
        names.push_back(entry.path().filename().string());
    return names;
}

std::string majmin_of_path(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) < 0 || !S_ISBLK(st.st_mode))
        return {};
    return std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev));
}

} // namespace

std::string unescape_octal(std::string_view text) {
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '\\' && i + 3 < text.size() && text[i + 1] >= '0' && text[i + 1] <= '3' &&
            text[i + 2] >= '0' && text[i + 2] <= '7' && text[i + 3] >= '0' && text[i + 3] <= '7') {
            out += static_cast<char>((text[i + 1] - '0') * 64 + (text[i + 2] - '0') * 8 +
                                     (text[i + 3] - '0'));
            i += 3;
        } else {
            out += text[i];
        }
    }
    return out;
}

// "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue"
std::vector<MountEntry> parse_mountinfo(std::string_view text) {
    std::vector<MountEntry> mounts;
    std::istringstream lines{std::string(text)};
    std::string line;
    while (std::getline(lines, line)) {
        std::istringstream fields(line);
        std::string id, parent, majmin, root, point, options, word;
        if (!(fields >> id >> parent >> majmin >> root >> point >> options))
            continue;
        while (fields >> word && word != "-") {
        }
        std::string fstype, source, super_options;
        fields >> fstype >> source >> super_options;
        mounts.push_back({majmin, unescape_octal(point), unescape_octal(source), fstype,
                          options + (super_options.empty() ? "" : "," + super_options)});
    }
    return mounts;
}

std::vector<std::string> parse_swaps(std::string_view text) {
    std::vector<std::string> swaps;
    std::istringstream lines{std::string(text)};
    std::string line;
    std::getline(lines, line); // header
    while (std::getline(lines, line)) {
        std::istringstream fields(line);
        std::string name;
        if (fields >> name)
            swaps.push_back(unescape_octal(name));
    }
    return swaps;
}

std::string SysBlock::dir_of(const std::string& name) const {
    return m_root + "/class/block/" + name;
}

std::string SysBlock::attribute(const std::string& name, const std::string& path) const {
    return read_first_line(dir_of(name) + "/" + path);
}

std::vector<std::string> SysBlock::partitions(const std::string& disk) const {
    std::vector<std::string> parts;
    for (const auto& entry : list_dir(dir_of(disk)))
        if (entry.rfind(disk, 0) == 0 &&
            std::filesystem::exists(dir_of(disk) + "/" + entry + "/partition"))
            parts.push_back(entry);
    return parts;
}

std::vector<std::string> SysBlock::holders(const std::string& name) const {
    return list_dir(dir_of(name) + "/holders");
}

std::set<std::string> SysBlock::base_disks(const std::string& name) const {
    std::set<std::string> disks;
    if (std::filesystem::exists(dir_of(name) + "/partition")) {
        // A partition's directory lies inside its disk's.
        std::error_code ec;
        const auto real = std::filesystem::canonical(dir_of(name), ec);
        if (!ec)
            disks.insert(real.parent_path().filename().string());
        return disks;
    }
    const auto slaves = list_dir(dir_of(name) + "/slaves");
    if (slaves.empty()) {
        disks.insert(name);
        return disks;
    }
    for (const auto& slave : slaves)
        for (const auto& disk : base_disks(slave))
            disks.insert(disk);
    return disks;
}

std::string SysBlock::name_of(const std::string& majmin) const {
    std::error_code ec;
    const auto real = std::filesystem::canonical(m_root + "/dev/block/" + majmin, ec);
    return ec ? std::string() : real.filename().string();
}

ProtectedDisks find_protected_disks(const std::vector<MountEntry>& mounts,
                                    const std::vector<std::string>& swaps, const SysBlock& sys) {
    ProtectedDisks out;
    const auto add_disks_under = [&](const std::string& majmin, std::set<std::string>& into) {
        const auto name = sys.name_of(majmin);
        if (name.empty())
            return;
        for (const auto& disk : sys.base_disks(name)) {
            const auto numbers = sys.attribute(disk, "dev");
            if (!numbers.empty())
                into.insert(numbers);
        }
    };
    for (const auto& m : mounts) {
        if (m.mount_point != "/" && m.mount_point != "/boot" && m.mount_point != "/boot/efi")
            continue;
        auto& into = m.mount_point == "/" ? out.root : out.boot;
        add_disks_under(m.majmin, into);
        // Some file systems (btrfs) show an anonymous number; their source names the device.
        if (const auto numbers = majmin_of_path(m.source); !numbers.empty())
            add_disks_under(numbers, into);
    }
    for (const auto& swap : swaps)
        if (const auto numbers = majmin_of_path(swap); !numbers.empty())
            add_disks_under(numbers, out.swap);
    return out;
}

std::vector<Opener> find_openers(const std::set<dev_t>& devices) {
    std::vector<Opener> openers;
    const pid_t self = ::getpid();
    // A scan that cannot be made is no answer: it counts as an opener nobody can
    // see, so that every caller holds back as it would for one (docs/safety.md).
    const auto cannot_scan = [&openers](const std::string& what) {
        openers.push_back({0, "", true, errno_error(what).message, "", static_cast<uid_t>(-1)});
        return openers;
    };
    DIR* proc = ::opendir("/proc");
    if (!proc)
        return cannot_scan("/proc");
    errno = 0;
    while (const dirent* entry = ::readdir(proc)) {
        const std::string pid_text = entry->d_name;
        if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos)
            continue;
        const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
        if (pid == self)
            continue;
        const std::string fd_dir = "/proc/" + pid_text + "/fd";
        DIR* fds = ::opendir(fd_dir.c_str());
        if (!fds) {
            // Gone meanwhile is nothing; not allowed to look is not "not open"; out
            // of descriptors or memory, nothing is known.
            const int err = errno;
            if (err == EACCES || err == EPERM)
                openers.push_back({pid, read_first_line("/proc/" + pid_text + "/comm"), true});
            else if (err != ENOENT && err != ESRCH) {
                ::closedir(proc);
                errno = err;
                return cannot_scan(fd_dir);
            }
            errno = 0;
            continue;
        }
        bool holds = false;
        errno = 0;
        while (const dirent* fd = ::readdir(fds)) {
            struct stat st {};
            if (fd->d_name[0] != '.' && ::fstatat(::dirfd(fds), fd->d_name, &st, 0) == 0 &&
                S_ISBLK(st.st_mode) && devices.count(st.st_rdev)) {
                holds = true;
                break;
            }
            errno = 0;
        }
        // A process that exits mid-listing ends its list with ENOENT or ESRCH.
        const int listed = holds ? 0 : errno;
        ::closedir(fds);
        if (holds) {
            std::error_code ec;
            const auto exe = std::filesystem::read_symlink("/proc/" + pid_text + "/exe", ec);
            struct stat owner {};
            const bool known = ::stat(("/proc/" + pid_text).c_str(), &owner) == 0;
            openers.push_back({pid, read_first_line("/proc/" + pid_text + "/comm"), false, "",
                               ec ? std::string() : exe.string(),
                               known ? owner.st_uid : static_cast<uid_t>(-1)});
        }
        else if (listed && listed != ENOENT && listed != ESRCH) {
            ::closedir(proc);
            errno = listed;
            return cannot_scan(fd_dir);
        }
        errno = 0;
    }
    const int listed = errno;
    ::closedir(proc);
    if (listed) {
        errno = listed;
        return cannot_scan("/proc");
    }
    return openers;
}

std::string Opener::text() const {
    if (!unscanned.empty())
        return "a process unknown (the scan for openers failed at " + unscanned + ")";
    return comm + " (pid " + std::to_string(pid) + ")" +
           (unseen ? ": its open files cannot be read" : "");
}

bool is_udev_worker(const Opener& opener) {
    if (opener.comm != "systemd-udevd" && opener.comm != "(udev-worker)")
        return false;
    const auto program = std::filesystem::path(opener.exe).filename();
    return opener.uid == 0 && (program == "systemd-udevd" || program == "udevadm");
}

std::string someone_else(dev_t disk) {
    for (const auto& opener : find_openers({disk}))
        if (!is_udev_worker(opener))
            return opener.text();
    return {};
}

} // namespace prewarmd
