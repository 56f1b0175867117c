// A secret kept in a file: a regular file this daemon's user owns, which no one else
// may read, in a directory only root (or that user) may change. The API's token and
// the webhooks' signing secret are read so.
#pragma once

#include <cstddef>
#include <string>

#include "base/result.hh"

namespace prewarmd {

// Its text, trailing newlines and spaces cut, at most `max_bytes` read. Errors say
// what to do: "owned by uid 1000, not by uid 0 (this daemon): chown it".
Result<std::string> read_private_file(const std::string& path, size_t max_bytes);

// Overwrites the secret's bytes before the memory goes back.
void forget_secret(std::string& secret);

} // namespace prewarmd
