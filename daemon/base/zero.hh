// Whether a buffer holds only zero bytes, at memory-compare speed.
#pragma once

#include <cstddef>

namespace prewarmd {
bool is_all_zero(const char* data, size_t length);
}
