// The API's bearer token: a file only its owner may read (token_file, or one the
// daemon makes in its state directory at the first start), kept in memory as its
// SHA-256 only and compared in constant time. Never logged.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "base/result.hh"

namespace prewarmd {

using TokenDigest = std::array<unsigned char, 32>;

// Where the daemon's token lives: `token_file` when set, else STATE_DIR/api.token.
std::string token_path(const std::string& token_file, const std::string& state_dir);

// Makes a fresh random token at `path` (mode 0600, written atomically) unless a
// file is there already. True when it made one.
Result<bool> make_token_if_missing(const std::string& path);

// The digest of the token in `path`: a regular file, mode 0600 or stricter, holding
// 16 to 4096 of A-Z a-z 0-9 . _ ~ - (a trailing newline allowed).
Result<TokenDigest> load_token(const std::string& path);

// Whether `given` (an Authorization header's value, "Bearer TOKEN") holds the token.
bool bearer_matches(std::string_view authorization, const TokenDigest& token);

} // namespace prewarmd
