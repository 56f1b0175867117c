#include "events/outbox.hh"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/atomic_file.hh"
#include "base/json_text.hh"

namespace prewarmd {
namespace {

// "00000000000000000042.json": 42
std::optional<uint64_t> seq_of(const std::string& name) {
    if (name.size() != 25 || name.substr(20) != ".json" ||
        name.find_first_not_of("0123456789") != 20)
        return std::nullopt;
    return std::stoull(name.substr(0, 20));
}

std::optional<Outbox::Entry> read_entry(const std::string& path, uint64_t seq) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    const auto j = nlohmann::json::parse(text.str(), nullptr, false);
    if (!j.is_object() || !j.contains("url") || !j["url"].is_string() || !j.contains("id") ||
        !j["id"].is_string() || !j.contains("time_ms") || !j["time_ms"].is_number_integer() ||
        !j.contains("body") || !j["body"].is_string())
        return std::nullopt;
    return Outbox::Entry{seq, j["url"], j["id"], j["time_ms"], j["body"]};
}

} // namespace

Result<std::unique_ptr<Outbox>> Outbox::open(const std::string& dir, size_t max,
                                             std::vector<std::string>& damaged) {
    if (::mkdir(dir.c_str(), 0700) < 0 && errno != EEXIST)
        return errno_error(dir);
    std::unique_ptr<Outbox> box(new Outbox(dir, max));
    DIR* d = ::opendir(dir.c_str());
    if (!d)
        return errno_error(dir);
    std::vector<std::string> names;
    while (const auto* e = ::readdir(d))
        if (e->d_name[0] != '.')
            names.emplace_back(e->d_name);
    ::closedir(d);
    for (const auto& name : names) {
        const auto seq = seq_of(name);
        auto entry = seq ? read_entry(dir + "/" + name, *seq) : std::nullopt;
        if (!entry) {
            damaged.push_back(dir + "/" + name);
            ::unlink((dir + "/" + name).c_str());
            continue;
        }
        box->m_entries.push_back(std::move(*entry));
    }
    std::sort(box->m_entries.begin(), box->m_entries.end(),
              [](const Entry& a, const Entry& b) { return a.seq < b.seq; });
    if (!box->m_entries.empty())
        box->m_next_seq = box->m_entries.back().seq + 1;
    box->trim();
    return box;
}

std::string Outbox::path_of(uint64_t seq) const {
    char name[32];
    std::snprintf(name, sizeof name, "%020llu.json", static_cast<unsigned long long>(seq));
    return m_dir + "/" + name;
}

Result<void> Outbox::add(const std::string& url, const std::string& id, int64_t time_unix_ms,
                         const std::string& body) {
    std::lock_guard lock(m_mutex);
    const uint64_t seq = m_next_seq++;
    if (auto written = write_file_atomically(
            path_of(seq),
            json_text({{"url", url}, {"id", id}, {"time_ms", time_unix_ms}, {"body", body}}), 0600);
        !written)
        return written;
    m_entries.push_back({seq, url, id, time_unix_ms, body});
    trim();
    return {};
}

std::optional<Outbox::Entry> Outbox::first(const std::string& url) const {
    std::lock_guard lock(m_mutex);
    for (const auto& e : m_entries)
        if (e.url == url)
            return e;
    return std::nullopt;
}

void Outbox::erase_at(size_t index) {
    ::unlink(path_of(m_entries[index].seq).c_str());
    m_entries.erase(m_entries.begin() + static_cast<std::ptrdiff_t>(index));
}

void Outbox::remove(uint64_t seq) {
    std::lock_guard lock(m_mutex);
    for (size_t i = 0; i < m_entries.size(); ++i)
        if (m_entries[i].seq == seq) {
            erase_at(i);
            return;
        }
}

// Called with the lock held.
void Outbox::trim() {
    while (m_entries.size() > m_max) {
        erase_at(0);
        ++m_dropped;
    }
}

size_t Outbox::keep_only(const std::vector<std::string>& urls, size_t max) {
    std::lock_guard lock(m_mutex);
    const uint64_t before = m_dropped;
    for (size_t i = m_entries.size(); i > 0; --i)
        if (std::find(urls.begin(), urls.end(), m_entries[i - 1].url) == urls.end()) {
            erase_at(i - 1);
            ++m_dropped;
        }
    m_max = max;
    trim();
    return static_cast<size_t>(m_dropped - before);
}

size_t Outbox::size() const {
    std::lock_guard lock(m_mutex);
    return m_entries.size();
}

uint64_t Outbox::dropped() const {
    std::lock_guard lock(m_mutex);
    return m_dropped;
}

} // namespace prewarmd
