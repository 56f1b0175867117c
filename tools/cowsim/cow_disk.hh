// One simulated thin copy-on-write disk: a fixed-size extent stored sparsely in a
// backing file, allocated a backend block at a time on first write, optionally a
// clone reading unallocated blocks from a parent image. Which blocks are allocated
// is kept in a map file beside the store; zeros are never stored, only charged, so
// warming a 1 TiB disk costs the host no space and no disk writes.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <condition_variable>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend.hh"
#include "base/result.hh"
#include "base/unique_fd.hh"
#include "faults.hh"

namespace cowsim {

constexpr uint64_t sector_bytes = 512;

// What the backend does with a write of zeros (QEMU's detect-zeroes): `off` writes
// it as any data; `on` allocates nothing for it (a zero cluster); `unmap` also gives
// back an allocated block it covers whole (discard=unmap, as XCP-ng's qcow2 driver).
enum class Zeroes { off, on, unmap };
const char* to_string(Zeroes zeroes);

struct DiskConfig {
    std::string name;
    uint64_t size_bytes = 0;
    uint64_t block_bytes = 2 * 1024 * 1024;
    bool sector_bitmap = false;
    Zeroes zeroes = Zeroes::off;
    // Block allocations in flight at once (0: unlimited). 1 is tapdisk's VHD: while
    // one new block's BAT entry is being written, a write to another new block is
    // answered EBUSY inside tapdisk and retried, so here it waits.
    unsigned allocations = 0;
    std::string store_path;  // created sparse when missing; the map is store_path.map
    std::string parent_path; // empty: not a clone
};

// Counters for the stats file. Relaxed atomics: each is a tally on its own.
struct DiskCounters {
    std::atomic<uint64_t> reads{0}, writes{0}, flushes{0};
    std::atomic<uint64_t> bytes_read{0}, bytes_written{0};
    std::atomic<uint64_t> blocks_allocated{0}, first_writes{0};
    std::atomic<uint64_t> backend_bytes_written{0}, backend_bytes_read{0};
    std::atomic<uint64_t> link_bytes_written{0}; // of those writes, what crossed the link
    std::atomic<uint64_t> parent_bytes_read{0}, hole_bytes_read{0};
    std::atomic<uint64_t> meta_syncs{0}, faults_injected{0};
    std::atomic<uint64_t> zero_bytes_dropped{0}, blocks_unmapped{0}; // detect-zeroes
    // allocations=N: writes that waited for other blocks' allocations, and the most
    // allocations ever in flight at once.
    std::atomic<uint64_t> allocation_waits{0}, allocations_in_flight_peak{0};
};

class CowDisk {
public:
    // Opens or creates the store and its map. A store without a map (an image made
    // elsewhere) counts its blocks holding data (SEEK_DATA) as allocated.
    static prewarmd::Result<std::unique_ptr<CowDisk>> open(const DiskConfig& config,
                                                           Backend& backend);

    // Both return bytes transferred or a negative errno, as a FUSE handler does.
    // A write past the end is cut short there; one starting at the end gets -ENOSPC.
    int64_t read(char* buf, uint64_t len, uint64_t offset);
    int64_t write(const char* buf, uint64_t len, uint64_t offset);
    void flush() { m_counters.flushes++; }

    const DiskConfig& config() const { return m_config; }
    const std::string& name() const { return m_config.name; }
    uint64_t size_bytes() const { return m_config.size_bytes; }
    uint64_t blocks_total() const { return m_blocks_total; }
    uint64_t allocated_blocks() const;
    uint64_t allocated_bytes() const;
    bool is_allocated(uint64_t block) const;
    // Sectors of an allocated block never written (bitmap mode); 0 otherwise.
    uint64_t unwritten_sectors(uint64_t block) const;

    const DiskCounters& counters() const { return m_counters; }
    FaultSet& faults() { return m_faults; }
    bool present() const { return m_present; }
    void set_present(bool present) { m_present = present; }

private:
    static constexpr size_t stripe_count = 1024;
    struct Stripe {
        std::mutex mutex;
        // Bitmap mode: per allocated block not yet fully written, one bit per sector
        // (set: written). A block absent here is either unallocated or full.
        std::unordered_map<uint64_t, std::vector<uint64_t>> partial;
    };

    CowDisk(const DiskConfig& config, Backend& backend, prewarmd::UniqueFd store,
            prewarmd::UniqueFd parent, prewarmd::UniqueFd map);
    prewarmd::Result<void> load_map();
    prewarmd::Result<void> scan_store();
    // Writes to the store; all-zero data becomes a hole instead of a write.
    int store_write(const char* data, uint64_t len, uint64_t offset);
    uint64_t block_length(uint64_t block) const;
    Stripe& stripe(uint64_t block) const { return m_stripes[block % stripe_count]; }
    // Marks a block allocated (or not), in memory and in the map file.
    void set_allocated(uint64_t block, bool allocated = true);
    // A write of zeros where detect-zeroes is on: nothing allocated, a block covered
    // whole given back under unmap, zeros written into an allocated block otherwise.
    int write_zeros(uint64_t block, const char* data, uint64_t offset, uint64_t len);
    int fill_from_parent(char* buf, uint64_t len, uint64_t offset);
    int allocate_block(uint64_t block, const char* data, uint64_t piece_offset, uint64_t piece_len);
    // With allocations=N: waits for a free allocation slot, counting the wait.
    void acquire_allocation();
    void release_allocation();
    int write_allocated(uint64_t block, const char* data, uint64_t offset, uint64_t len);
    int inject_faults(OpKind op, uint64_t offset, uint64_t len);
    template <typename PieceFn>
    int64_t by_block(uint64_t offset, uint64_t len, PieceFn piece_fn);
    // Marks the sectors of [offset, offset+len) written; true if any was not.
    bool mark_written(Stripe& stripe, uint64_t block, uint64_t offset, uint64_t len);

    const DiskConfig m_config;
    Backend& m_backend;
    prewarmd::UniqueFd m_store;
    prewarmd::UniqueFd m_parent;
    prewarmd::UniqueFd m_map;
    std::mutex m_map_mutex;
    uint64_t m_blocks_total = 0;
    std::vector<std::atomic<uint64_t>> m_allocated; // one bit per block
    std::unique_ptr<Stripe[]> m_stripes;
    DiskCounters m_counters;
    FaultSet m_faults;
    std::atomic<bool> m_present{true};
    std::mutex m_allocations_mutex;
    std::condition_variable m_allocation_done;
    unsigned m_allocations_in_flight = 0;
};

} // namespace cowsim
