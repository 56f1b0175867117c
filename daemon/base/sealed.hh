// State files with a checksum: a header line "prewarmd-KIND VERSION crc32c=XXXXXXXX"
// then the body, so a damaged or half-written file is told from a good one.
#pragma once

#include <string>
#include <string_view>

#include "base/result.hh"

namespace prewarmd {

std::string seal(std::string_view kind, int version, std::string_view body);
// The body, or -EBADMSG saying what is wrong (no header, another kind or version,
// a checksum mismatch).
Result<std::string> unseal(std::string_view kind, int version, std::string_view text);

} // namespace prewarmd
