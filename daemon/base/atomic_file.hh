// Replacing a file so that a crash leaves the old version or the new one, never a
// mix: write a temporary file, fsync it, rename it over, fsync the directory.
#pragma once

#include <string>
#include <string_view>

#include "base/result.hh"

namespace prewarmd {

Result<void> write_file_atomically(const std::string& path, std::string_view content,
                                   unsigned mode = 0600);

} // namespace prewarmd
