#include "state/state_dir.hh"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/atomic_file.hh"
#include "base/io.hh"
#include "base/json_text.hh"
#include "base/sealed.hh"
#include "base/sysfs.hh"
#include "discovery/identity.hh"

namespace prewarmd {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view record_kind = "job";

Result<JobRecord> parse_record(std::string_view text) {
    auto body = unseal(record_kind, 1, text);
    if (!body)
        return body.error();
    try {
        const auto j = nlohmann::json::parse(*body);
        JobRecord r;
        r.identity = j.at("identity").get<std::string>();
        r.state = j.at("state").get<std::string>();
        if (r.state.empty() || r.identity.empty() || url_safe(r.identity) != r.identity)
            throw std::invalid_argument("bad state or identity");
        r.reason = j.at("reason").get<std::string>();
        r.mode = j.at("mode").get<std::string>();
        r.requested = j.at("requested").get<bool>();
        // own_rate_bytes_per_s since a rate of 0 means unlimited; before, a
        // rate_bytes_per_s of 0 meant none.
        if (const auto own = j.find("own_rate_bytes_per_s"); own != j.end())
            r.rate_bytes_per_s = own->get<uint64_t>();
        else if (const auto rate = j.at("rate_bytes_per_s").get<uint64_t>())
            r.rate_bytes_per_s = rate;
        r.name = j.at("name").get<std::string>();
        r.size_bytes = j.at("size_bytes").get<uint64_t>();
        r.done_bytes = j.at("done_bytes").get<uint64_t>();
        r.written_bytes = j.at("written_bytes").get<uint64_t>();
        r.skipped_bytes = j.at("skipped_bytes").get<uint64_t>();
        r.updated_unix = j.at("updated_unix").get<int64_t>();
        r.probe = probe_figures_from(j.value("probe", nlohmann::json()));
        r.volume = j.value("volume", "");
        if (const auto d = j.find("deadline"); d != j.end())
            r.deadline_unix = {d->at("asked_unix").get<int64_t>(), d->at("at_unix").get<int64_t>()};
        return r;
    } catch (const std::exception& e) {
        return Error{-EBADMSG, std::string("a field is missing or wrong: ") + e.what()};
    }
}

} // namespace

Result<StateDir> StateDir::open(const std::string& path) {
    std::error_code ec;
    for (const auto* sub : {"", "/jobs", "/checkpoints"}) {
        fs::create_directories(path + sub, ec);
        if (ec)
            return Error{-ec.value(), "cannot create " + path + sub + ": " + ec.message()};
    }
    ::chmod(path.c_str(), 0700);
    StateDir dir;
    dir.m_path = path;
    const auto lock_path = path + "/lock";
    dir.m_lock.reset(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (!dir.m_lock)
        return errno_error("open " + lock_path);
    if (::flock(dir.m_lock.get(), LOCK_EX | LOCK_NB) < 0) {
        if (errno == EWOULDBLOCK) {
            const auto pid = read_first_line(lock_path);
            return Error{-EBUSY, "another prewarmd (pid " + (pid.empty() ? "?" : pid) +
                                     ") uses the state directory " + path};
        }
        return errno_error("lock " + lock_path);
    }
    const auto pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(dir.m_lock.get(), 0) < 0 ||
        !pwrite_full(dir.m_lock.get(), pid.data(), pid.size(), 0))
        return errno_error("write " + lock_path);
    dir.keep_spare();
    return dir;
}

void StateDir::keep_spare() const {
    if (m_spare)
        return;
    const auto path = m_path + "/spare";
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (fd && ::fallocate(fd.get(), 0, 0, spare_bytes) == 0)
        m_spare = true;
    else
        ::unlink(path.c_str()); // none rather than one that holds less than it says
}

std::string StateDir::checkpoint_path(const std::string& identity) const {
    return m_path + "/checkpoints/" + identity + ".ckpt";
}

Result<void> StateDir::save(const JobRecord& r) const {
    nlohmann::json j = {
        {"identity", r.identity},
        {"state", r.state},
        {"reason", r.reason},
        {"mode", r.mode},
        {"requested", r.requested},
        {"rate_bytes_per_s", r.rate_bytes_per_s.value_or(0)}, // what an older daemon reads
        {"name", r.name},
        {"size_bytes", r.size_bytes},
        {"done_bytes", r.done_bytes},
        {"written_bytes", r.written_bytes},
        {"skipped_bytes", r.skipped_bytes},
        {"updated_unix",
         r.updated_unix ? r.updated_unix : static_cast<int64_t>(std::time(nullptr))},
        {"probe", to_json(r.probe)},
        {"volume", r.volume},
    };
    if (r.rate_bytes_per_s)
        j["own_rate_bytes_per_s"] = *r.rate_bytes_per_s;
    if (r.deadline_unix)
        j["deadline"] = {{"asked_unix", r.deadline_unix->first},
                         {"at_unix", r.deadline_unix->second}};
    const auto path = m_path + "/jobs/" + r.identity + ".json";
    const auto text = seal(record_kind, 1, json_text(j) + "\n");
    auto written = write_file_atomically(path, text);
    if (!written && (written.error().err == -ENOSPC || written.error().err == -EDQUOT) && m_spare &&
        ::unlink((m_path + "/spare").c_str()) == 0) {
        m_spare = false;
        written = write_file_atomically(path, text);
    }
    if (written)
        keep_spare();
    return written;
}

void StateDir::forget(const std::string& identity) const {
    std::error_code ec;
    fs::remove(m_path + "/jobs/" + identity + ".json", ec);
    drop_checkpoint(identity);
}

void StateDir::drop_checkpoint(const std::string& identity) const {
    std::error_code ec;
    fs::remove(checkpoint_path(identity), ec);
}

StateDir::Loaded StateDir::load() const {
    Loaded loaded;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(m_path + "/jobs", ec)) {
        const auto file = entry.path();
        if (file.extension() != ".json")
            continue;
        auto record = parse_record(read_text(file.string()));
        if (record && record->identity + ".json" == file.filename().string()) {
            loaded.records.push_back(std::move(*record));
            continue;
        }
        const auto why =
            record ? std::string("its identity does not match its name") : record.error().message;
        fs::create_directories(m_path + "/damaged", ec);
        fs::rename(file, m_path + "/damaged/" + file.filename().string(), ec);
        loaded.set_aside.push_back("jobs/" + file.filename().string() + ": " + why +
                                   " (moved to damaged/)");
    }
    return loaded;
}

} // namespace prewarmd
