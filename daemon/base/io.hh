// Whole-buffer positioned I/O: short transfers and EINTR are retried, never ignored.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/result.hh"

namespace prewarmd {

// Reads up to `len` bytes at `offset`; fewer only at end of file.
Result<size_t> pread_full(int fd, void* buf, size_t len, uint64_t offset);
Result<void> pwrite_full(int fd, const void* buf, size_t len, uint64_t offset);

} // namespace prewarmd
