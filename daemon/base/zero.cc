#include "base/zero.hh"

#include <cstring>

namespace prewarmd {

// When the first 16 bytes are zero and every byte equals the one 16 bytes later,
// every byte is zero: one memcmp, which libc runs with the widest vector unit.
bool is_all_zero(const char* data, size_t length) {
    static constexpr char zeros[16] = {};
    if (length <= sizeof zeros)
        return std::memcmp(data, zeros, length) == 0;
    return std::memcmp(data, zeros, sizeof zeros) == 0 &&
           std::memcmp(data, data + sizeof zeros, length - sizeof zeros) == 0;
}

} // namespace prewarmd
