// The HTTP API on the wire (cpp-httplib 0.11.4): TCP listeners (TLS when given a
// certificate) and a unix socket, each with its own worker pool, all handing
// requests to one ApiRouter. Debian's 0.11.4 lacks several upstream fixes, so a
// guard runs before any body is read: no Transfer-Encoding or Content-Encoding, one
// Content-Length within 64 KiB, bounded headers, the client's rate, and who may
// read or change (api/access.hh). Every connection is read by the daemon itself,
// within a deadline and the peer's budget (api/connection.hh), and only whole
// request heads reach the library.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "api/events.hh"
#include "api/router.hh"
#include "base/result.hh"
#include "config/config.hh"

namespace prewarmd {

class ApiServer {
public:
    using Log = std::function<void(bool warning, const std::string& line)>;

    // Loads the token (making STATE_DIR/api.token at the first start when no
    // token_file is set; a token file must be 0600 and well-formed), binds every
    // listener, and serves. Who may do what: api/access.hh. Errors are meant for the
    // operator: they name the setting.
    static Result<std::unique_ptr<ApiServer>> start(const Config& config, ApiRouter& router,
                                                    EventBus& events, Log log);
    ~ApiServer();
    ApiServer(const ApiServer&) = delete;
    ApiServer& operator=(const ApiServer&) = delete;

    // A reload: the token file read again (rotated: a new token in the file; or
    // none, when the daemon made it: a new one is made), the socket's group looked up.
    // On an error the old ones stay.
    Result<void> reload_access(const Config& config);

    // Stops accepting, ends the event streams, and joins the listeners.
    void stop();

    struct Impl;

private:
    explicit ApiServer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

// What ApiServer::start would refuse in `config`, without binding anything: a token
// file that is not there or others may read, a certificate without its key or one
// that does not load.
Result<void> check_api_config(const Config& config);

// Whether a "HOST:PORT" listen address is on this machine's loopback.
bool is_loopback_address(const std::string& address);

} // namespace prewarmd
