// CRC-32C (Castagnoli), to tell a damaged state file from a good one.
#pragma once

#include <cstdint>
#include <string_view>

namespace prewarmd {
uint32_t crc32c(std::string_view data);
}
