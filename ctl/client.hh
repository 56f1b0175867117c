// prewarmctl's way to the daemon: its HTTP API over the unix socket (the default)
// or a URL, with the bearer token when one is given.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/result.hh"

namespace prewarmd::ctl {

struct Target {
    std::string socket = "/run/prewarmd/api.sock";
    std::string url;   // "http://host:port" or "https://host:port": then not the socket
    std::string token; // "" for none
    std::string ca_file;
};

struct Reply {
    int status = 0;
    nlohmann::json body; // null when the body is not JSON
};

class Client {
public:
    explicit Client(Target target);
    ~Client();
    // Errors: -ECONNREFUSED when the daemon cannot be reached (with how it was tried).
    Result<Reply> get(const std::string& path);
    Result<Reply> post(const std::string& path, const nlohmann::json& body);
    Result<Reply> patch(const std::string& path, const nlohmann::json& body);
    std::string where() const;

private:
    Result<Reply> call(const std::string& method, const std::string& path,
                       const nlohmann::json* body);
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace prewarmd::ctl
