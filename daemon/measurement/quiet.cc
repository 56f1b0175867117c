#include "measurement/quiet.hh"

namespace prewarmd {
namespace {

thread_local const ProbeQuiet* t_holding = nullptr;

} // namespace

ProbeQuiet::Hold::Hold(ProbeQuiet& quiet, std::chrono::milliseconds drain)
    : m_quiet(quiet), m_outer(t_holding != &quiet) {
    if (!m_outer)
        return;
    m_quiet.m_probe_mutex.lock();
    t_holding = &m_quiet;
    m_quiet.m_held.store(true, std::memory_order_release);
    std::unique_lock lock(m_quiet.m_mutex);
    m_quiet.m_idle.wait_for(lock, drain, [this] { return m_quiet.m_busy.empty(); });
}

ProbeQuiet::Hold::~Hold() {
    if (!m_outer)
        return;
    m_quiet.m_held.store(false, std::memory_order_release);
    t_holding = nullptr;
    m_quiet.m_probe_mutex.unlock();
}

void ProbeQuiet::set_busy(const void* job, bool busy) {
    std::lock_guard lock(m_mutex);
    if (busy) {
        m_busy.insert(job);
        return;
    }
    m_busy.erase(job);
    if (m_busy.empty())
        m_idle.notify_all();
}

size_t ProbeQuiet::busy() const {
    std::lock_guard lock(m_mutex);
    return m_busy.size();
}

ProbeQuiet& ProbeQuiet::process() {
    static ProbeQuiet quiet;
    return quiet;
}

} // namespace prewarmd
