#include "api/token.hh"

#include <sys/random.h>
#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <string>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "base/atomic_file.hh"
#include "base/private_file.hh"

namespace prewarmd {
namespace {

TokenDigest sha256(std::string_view text) {
    TokenDigest out{};
    unsigned int length = 0;
    EVP_Digest(text.data(), text.size(), out.data(), &length, EVP_sha256(), nullptr);
    return out;
}

bool token_character(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '~' ||
           c == '-';
}

// 32 random bytes as base64url without padding: 43 characters.
Result<std::string> random_token() {
    unsigned char bytes[32];
    size_t got = 0;
    while (got < sizeof bytes) {
        const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno_error("getrandom");
        }
        got += static_cast<size_t>(n);
    }
    static constexpr char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out;
    uint32_t bits = 0;
    int held = 0;
    for (const unsigned char b : bytes) {
        bits = (bits << 8) | b;
        held += 8;
        while (held >= 6) {
            held -= 6;
            out += alphabet[(bits >> held) & 63];
        }
    }
    if (held > 0)
        out += alphabet[(bits << (6 - held)) & 63];
    OPENSSL_cleanse(bytes, sizeof bytes);
    return out;
}

} // namespace

std::string token_path(const std::string& token_file, const std::string& state_dir) {
    return token_file.empty() ? state_dir + "/api.token" : token_file;
}

Result<bool> make_token_if_missing(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0)
        return false;
    if (errno != ENOENT)
        return errno_error("[api] token " + path);
    auto token = random_token();
    if (!token)
        return token.error();
    auto written = write_file_atomically(path, *token + "\n", 0600);
    OPENSSL_cleanse(token->data(), token->size());
    if (!written)
        return Error{written.error().err, "[api] token " + written.error().message};
    return true;
}

Result<TokenDigest> load_token(const std::string& path) {
    const auto bad = [&](const std::string& why) {
        return Error{-EINVAL, "[api] token_file " + path + ": " + why};
    };
    auto read = read_private_file(path, 4097);
    if (!read)
        return Error{read.error().err, "[api] token_file " + read.error().message};
    std::string token = std::move(*read);
    const auto cleanse = [&] { OPENSSL_cleanse(token.data(), token.size()); };
    if (token.size() < 16 || token.size() > 4096) {
        cleanse();
        return bad("the token must be 16 to 4096 characters long");
    }
    for (const char c : token)
        if (!token_character(c)) {
            cleanse();
            return bad("the token may hold letters, digits and . _ ~ - only");
        }
    const auto digest = sha256(token);
    cleanse();
    return digest;
}

bool bearer_matches(std::string_view authorization, const TokenDigest& token) {
    if (authorization.rfind("Bearer ", 0) != 0)
        return false;
    const auto given = sha256(authorization.substr(7));
    return CRYPTO_memcmp(given.data(), token.data(), token.size()) == 0;
}

} // namespace prewarmd
