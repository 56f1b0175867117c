#include "cow_disk.hh"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <thread>

#include "base/io.hh"
#include "base/range_set.hh"
#include "base/units.hh"
#include "base/zero.hh"

namespace cowsim {

using prewarmd::Error;
using prewarmd::Result;
using prewarmd::UniqueFd;

namespace {
constexpr uint64_t max_block_bytes = 64ULL * 1024 * 1024;
}

const char* to_string(Zeroes zeroes) {
    switch (zeroes) {
    case Zeroes::on:
        return "on";
    case Zeroes::unmap:
        return "unmap";
    case Zeroes::off:
        break;
    }
    return "off";
}

CowDisk::CowDisk(const DiskConfig& config, Backend& backend, UniqueFd store, UniqueFd parent,
                 UniqueFd map)
    : m_config(config), m_backend(backend), m_store(std::move(store)), m_parent(std::move(parent)),
      m_map(std::move(map)),
      m_blocks_total((config.size_bytes + config.block_bytes - 1) / config.block_bytes),
      m_allocated((m_blocks_total + 63) / 64), m_stripes(new Stripe[stripe_count]) {}

Result<std::unique_ptr<CowDisk>> CowDisk::open(const DiskConfig& config, Backend& backend) {
    const auto fail = [&](const std::string& what) {
        return Error{-EINVAL, "disk " + config.name + ": " + what};
    };
    if (config.size_bytes == 0 || config.size_bytes % sector_bytes != 0)
        return fail("size must be a positive multiple of 512 bytes");
    if (config.block_bytes < 4096 || config.block_bytes % 4096 != 0 ||
        config.block_bytes > max_block_bytes)
        return fail("block size must be a multiple of 4 KiB between 4 KiB and 64 MiB, not " +
                    prewarmd::format_size(config.block_bytes));
    if (config.store_path.empty())
        return fail("no store file");
    if (config.store_path == config.parent_path)
        return fail("the parent image cannot be the disk's own store");

    UniqueFd store(::open(config.store_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (!store)
        return prewarmd::errno_error("disk " + config.name + ": open store " + config.store_path);
    struct stat st {};
    if (::fstat(store.get(), &st) < 0)
        return prewarmd::errno_error("disk " + config.name + ": stat " + config.store_path);
    if (!S_ISREG(st.st_mode))
        return fail("store " + config.store_path + " is not a regular file");
    const auto store_size = static_cast<uint64_t>(st.st_size);
    if (store_size == 0) {
        if (::ftruncate(store.get(), static_cast<off_t>(config.size_bytes)) < 0)
            return prewarmd::errno_error("disk " + config.name + ": size store " +
                                         config.store_path);
    } else if (store_size != config.size_bytes) {
        return fail("store " + config.store_path + " holds a disk of " +
                    std::to_string(store_size) + " bytes, not " +
                    std::to_string(config.size_bytes));
    }

    const auto map_path = config.store_path + ".map";
    UniqueFd map(::open(map_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (!map)
        return prewarmd::errno_error("disk " + config.name + ": open map " + map_path);

    UniqueFd parent;
    if (!config.parent_path.empty()) {
        parent.reset(::open(config.parent_path.c_str(), O_RDONLY | O_CLOEXEC));
        if (!parent)
            return prewarmd::errno_error("disk " + config.name + ": open parent " +
                                         config.parent_path);
    }

    std::unique_ptr<CowDisk> disk(
        new CowDisk(config, backend, std::move(store), std::move(parent), std::move(map)));
    if (auto loaded = disk->load_map(); !loaded)
        return loaded.error();
    disk->m_counters.blocks_allocated = disk->allocated_blocks();
    backend.account_existing(disk->allocated_bytes());
    return disk;
}

// The map holds one bit per block, as the 64-bit words kept in memory.
Result<void> CowDisk::load_map() {
    const auto map_bytes = static_cast<off_t>(m_allocated.size() * sizeof(uint64_t));
    struct stat st {};
    if (::fstat(m_map.get(), &st) < 0)
        return prewarmd::errno_error("disk " + m_config.name + ": stat map");
    if (st.st_size == 0) {
        if (::ftruncate(m_map.get(), map_bytes) < 0)
            return prewarmd::errno_error("disk " + m_config.name + ": size map");
        return scan_store();
    }
    if (st.st_size != map_bytes)
        return Error{-EINVAL, "disk " + m_config.name + ": map " + m_config.store_path +
                                  ".map does not fit a disk of this size and block size"};
    std::vector<uint64_t> words(m_allocated.size());
    auto got = prewarmd::pread_full(m_map.get(), words.data(), static_cast<size_t>(map_bytes), 0);
    if (!got)
        return got.error();
    for (size_t i = 0; i < words.size(); ++i)
        m_allocated[i] = words[i];
    return {};
}

// A store without a map: its blocks holding data count as allocated.
Result<void> CowDisk::scan_store() {
    auto data = prewarmd::data_extents(m_store.get(), m_config.size_bytes);
    if (!data)
        return Error{data.error().err,
                     "disk " + m_config.name + ": scan store: " + data.error().message};
    for (const auto& extent : data->extents())
        for (uint64_t b = extent.offset / m_config.block_bytes;
             b <= (extent.end() - 1) / m_config.block_bytes; ++b)
            set_allocated(b);
    return {};
}

int CowDisk::store_write(const char* data, uint64_t len, uint64_t offset) {
    if (!prewarmd::is_all_zero(data, len))
        return prewarmd::pwrite_full(m_store.get(), data, len, offset) ? 0 : -EIO;
    // Zeros: nothing to do over a hole; over data, punch what whole pages there are
    // and write zeros at the edges.
    const off_t next_data = ::lseek(m_store.get(), static_cast<off_t>(offset), SEEK_DATA);
    if ((next_data < 0 && errno == ENXIO) || static_cast<uint64_t>(next_data) >= offset + len)
        return 0;
    constexpr uint64_t page = 4096;
    const uint64_t begin = (offset + page - 1) / page * page;
    const uint64_t end = (offset + len) / page * page;
    if (begin < end &&
        ::fallocate(m_store.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                    static_cast<off_t>(begin), static_cast<off_t>(end - begin)) == 0) {
        const uint64_t head = begin - offset, tail = offset + len - end;
        if (head && !prewarmd::pwrite_full(m_store.get(), data, head, offset))
            return -EIO;
        if (tail && !prewarmd::pwrite_full(m_store.get(), data, tail, end))
            return -EIO;
        return 0;
    }
    return prewarmd::pwrite_full(m_store.get(), data, len, offset) ? 0 : -EIO;
}

uint64_t CowDisk::block_length(uint64_t block) const {
    const uint64_t start = block * m_config.block_bytes;
    return std::min(m_config.block_bytes, m_config.size_bytes - start);
}

bool CowDisk::is_allocated(uint64_t block) const {
    return (m_allocated[block / 64].load(std::memory_order_acquire) >> (block % 64)) & 1;
}

void CowDisk::set_allocated(uint64_t block, bool allocated) {
    auto& word = m_allocated[block / 64];
    const uint64_t bit = uint64_t{1} << (block % 64);
    if (allocated)
        word.fetch_or(bit, std::memory_order_release);
    else
        word.fetch_and(~bit, std::memory_order_release);
    // Under the lock, the word written last holds every bit set before it.
    std::lock_guard lock(m_map_mutex);
    const uint64_t value = word.load(std::memory_order_acquire);
    [[maybe_unused]] const bool saved =
        prewarmd::pwrite_full(m_map.get(), &value, sizeof value, block / 64 * sizeof value).ok();
}

uint64_t CowDisk::allocated_blocks() const {
    uint64_t blocks = 0;
    for (const auto& word : m_allocated)
        blocks += static_cast<uint64_t>(std::popcount(word.load(std::memory_order_relaxed)));
    return blocks;
}

uint64_t CowDisk::allocated_bytes() const {
    uint64_t bytes = allocated_blocks() * m_config.block_bytes;
    const uint64_t last = m_blocks_total - 1;
    if (is_allocated(last))
        bytes -= m_config.block_bytes - block_length(last);
    return bytes;
}

uint64_t CowDisk::unwritten_sectors(uint64_t block) const {
    auto& s = stripe(block);
    std::lock_guard lock(s.mutex);
    const auto it = s.partial.find(block);
    if (it == s.partial.end())
        return 0;
    const uint64_t sectors = block_length(block) / sector_bytes;
    uint64_t written = 0;
    for (const auto word : it->second)
        written += static_cast<uint64_t>(std::popcount(word));
    return sectors - written;
}

bool CowDisk::mark_written(Stripe& s, uint64_t block, uint64_t offset, uint64_t len) {
    const auto it = s.partial.find(block);
    if (it == s.partial.end())
        return false;
    auto& bits = it->second;
    const uint64_t base = block * m_config.block_bytes;
    const uint64_t first = (offset - base) / sector_bytes;
    const uint64_t last = (offset + len - 1 - base) / sector_bytes;
    bool changed = false;
    for (uint64_t sector = first; sector <= last; ++sector) {
        const uint64_t bit = uint64_t{1} << (sector % 64);
        if (!(bits[sector / 64] & bit)) {
            bits[sector / 64] |= bit;
            changed = true;
        }
    }
    const uint64_t sectors = block_length(block) / sector_bytes;
    uint64_t written = 0;
    for (const auto word : bits)
        written += static_cast<uint64_t>(std::popcount(word));
    if (written == sectors)
        s.partial.erase(it);
    return changed;
}

int CowDisk::fill_from_parent(char* buf, uint64_t len, uint64_t offset) {
    auto got = prewarmd::pread_full(m_parent.get(), buf, len, offset);
    if (!got)
        return -EIO;
    std::memset(buf + *got, 0, len - *got);
    return 0;
}

// The first write to a block writes all of it: the parent's bytes (or zeros) with
// the new data laid over them, then pays the allocation latency.
int CowDisk::allocate_block(uint64_t block, const char* data, uint64_t offset, uint64_t len) {
    const uint64_t base = block * m_config.block_bytes;
    const uint64_t block_len = block_length(block);
    if (!m_backend.try_allocate(block_len))
        return -ENOSPC;

    Backend::Op op(m_backend);
    const bool on_host = m_backend.config().host_allocation;
    uint64_t transferred = on_host ? len : block_len;
    const char* source = data;
    if (len != block_len) {
        thread_local std::vector<char> buffer;
        buffer.resize(block_len);
        if (m_parent) {
            if (const int r = fill_from_parent(buffer.data(), block_len, base); r < 0) {
                m_backend.release_allocation(block_len);
                return r;
            }
            if (!on_host)
                transferred += block_len;
            m_counters.parent_bytes_read += block_len;
        } else {
            std::memset(buffer.data(), 0, block_len);
        }
        std::memcpy(buffer.data() + (offset - base), data, len);
        source = buffer.data();
    }
    if (const int r = store_write(source, block_len, base); r < 0) {
        m_backend.release_allocation(block_len);
        return r;
    }
    op.finish(transferred, m_backend.config().alloc_latency);

    if (m_config.sector_bitmap && len != block_len) {
        auto& s = stripe(block);
        auto& bits = s.partial[block];
        bits.assign((block_len / sector_bytes + 63) / 64, 0);
        mark_written(s, block, offset, len);
    }
    set_allocated(block);
    m_counters.blocks_allocated++;
    m_counters.first_writes++;
    m_counters.backend_bytes_written += block_len;
    m_counters.link_bytes_written += transferred;
    return 0;
}

// A write inside an allocated block costs its own size, plus a metadata sync in
// bitmap mode when it touches sectors never written before.
int CowDisk::write_allocated(uint64_t block, const char* data, uint64_t offset, uint64_t len) {
    std::chrono::nanoseconds latency{0};
    if (m_config.sector_bitmap && mark_written(stripe(block), block, offset, len)) {
        m_counters.meta_syncs++;
        latency = m_backend.config().sync_latency;
    }
    Backend::Op op(m_backend);
    if (const int r = store_write(data, len, offset); r < 0)
        return r;
    op.finish(len, latency);
    m_counters.backend_bytes_written += len;
    m_counters.link_bytes_written += len;
    return 0;
}

int CowDisk::write_zeros(uint64_t block, const char* data, uint64_t offset, uint64_t len) {
    const uint64_t block_len = block_length(block);
    if (!is_allocated(block)) {
        m_counters.zero_bytes_dropped += len; // reads zeros already: no backend work
        return 0;
    }
    if (m_config.zeroes == Zeroes::unmap && len == block_len) {
        if (::fallocate(m_store.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                        static_cast<off_t>(offset), static_cast<off_t>(len)) < 0)
            return -EIO;
        stripe(block).partial.erase(block);
        set_allocated(block, false);
        m_backend.release_allocation(block_len);
        m_counters.blocks_allocated--;
        m_counters.blocks_unmapped++;
        m_counters.zero_bytes_dropped += len;
        return 0;
    }
    return write_allocated(block, data, offset, len);
}

void CowDisk::acquire_allocation() {
    std::unique_lock lock(m_allocations_mutex);
    if (m_allocations_in_flight >= m_config.allocations) {
        m_counters.allocation_waits++;
        m_allocation_done.wait(lock,
                               [&] { return m_allocations_in_flight < m_config.allocations; });
    }
    ++m_allocations_in_flight;
    if (m_allocations_in_flight > m_counters.allocations_in_flight_peak)
        m_counters.allocations_in_flight_peak = m_allocations_in_flight;
}

void CowDisk::release_allocation() {
    {
        std::lock_guard lock(m_allocations_mutex);
        --m_allocations_in_flight;
    }
    m_allocation_done.notify_one();
}

int CowDisk::inject_faults(OpKind op, uint64_t offset, uint64_t len) {
    const auto verdict = m_faults.check(op, offset, len);
    if (verdict.delay.count() > 0)
        std::this_thread::sleep_for(verdict.delay);
    if (verdict.err == 0)
        return 0;
    m_counters.faults_injected++;
    return -verdict.err;
}

// Calls piece_fn(block, pos, len, done) for each part of [offset, offset + len) that
// lies in one block, until one fails. Returns the bytes done, or the first error
// when nothing was done.
template <typename PieceFn>
int64_t CowDisk::by_block(uint64_t offset, uint64_t len, PieceFn piece_fn) {
    uint64_t done = 0;
    while (done < len) {
        const uint64_t pos = offset + done;
        const uint64_t block = pos / m_config.block_bytes;
        const uint64_t block_end = block * m_config.block_bytes + block_length(block);
        const uint64_t piece = std::min(len - done, block_end - pos);
        if (const int r = piece_fn(block, pos, piece, done); r < 0) {
            if (done == 0)
                return r;
            break;
        }
        done += piece;
    }
    return static_cast<int64_t>(done);
}

int64_t CowDisk::write(const char* buf, uint64_t len, uint64_t offset) {
    m_counters.writes++;
    if (!m_present)
        return -ENODEV;
    if (len == 0)
        return 0;
    if (offset >= m_config.size_bytes)
        return -ENOSPC;
    len = std::min(len, m_config.size_bytes - offset);
    if (const int r = inject_faults(OpKind::write, offset, len); r < 0)
        return r;

    const auto done =
        by_block(offset, len, [&](uint64_t block, uint64_t pos, uint64_t piece, uint64_t at) {
            std::unique_lock lock(stripe(block).mutex);
            // A clone's unallocated block reads the parent's bytes: zeros there are data.
            if (m_config.zeroes != Zeroes::off && !m_parent &&
                prewarmd::is_all_zero(buf + at, piece))
                return write_zeros(block, buf + at, pos, piece);
            if (is_allocated(block))
                return write_allocated(block, buf + at, pos, piece);
            if (m_config.allocations == 0)
                return allocate_block(block, buf + at, pos, piece);
            // The slot is taken without the stripe held (another block of this stripe
            // may hold a slot and want the stripe), and the block looked at again.
            lock.unlock();
            acquire_allocation();
            lock.lock();
            const int r = is_allocated(block) ? write_allocated(block, buf + at, pos, piece)
                                              : allocate_block(block, buf + at, pos, piece);
            release_allocation();
            return r;
        });
    if (done > 0)
        m_counters.bytes_written += static_cast<uint64_t>(done);
    return done;
}

int64_t CowDisk::read(char* buf, uint64_t len, uint64_t offset) {
    m_counters.reads++;
    if (!m_present)
        return -ENODEV;
    if (offset >= m_config.size_bytes || len == 0)
        return 0;
    len = std::min(len, m_config.size_bytes - offset);
    if (const int r = inject_faults(OpKind::read, offset, len); r < 0)
        return r;

    const auto done =
        by_block(offset, len, [&](uint64_t block, uint64_t pos, uint64_t piece, uint64_t at) {
            char* out = buf + at;
            if (is_allocated(block)) {
                Backend::Op op(m_backend);
                auto got = prewarmd::pread_full(m_store.get(), out, piece, pos);
                if (!got)
                    return -EIO;
                std::memset(out + *got, 0, piece - *got);
                op.finish(piece, {});
                m_counters.backend_bytes_read += piece;
            } else if (m_parent) {
                Backend::Op op(m_backend);
                if (const int r = fill_from_parent(out, piece, pos); r < 0)
                    return r;
                op.finish(piece, {});
                m_counters.parent_bytes_read += piece;
            } else {
                std::memset(out, 0, piece);
                m_counters.hole_bytes_read += piece;
            }
            return 0;
        });
    if (done > 0)
        m_counters.bytes_read += static_cast<uint64_t>(done);
    return done;
}

} // namespace cowsim
