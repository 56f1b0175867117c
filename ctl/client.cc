#include "client.hh"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <httplib.h>

namespace prewarmd::ctl {

struct Client::Impl {
    Target target;
    std::unique_ptr<httplib::Client> http;
};

Client::Client(Target target) : m_impl(std::make_unique<Impl>()) {
    m_impl->target = std::move(target);
    const auto& t = m_impl->target;
    if (t.url.empty()) {
        m_impl->http = std::make_unique<httplib::Client>(t.socket, 80);
        m_impl->http->set_address_family(AF_UNIX);
    } else {
        m_impl->http = std::make_unique<httplib::Client>(t.url);
        if (!t.ca_file.empty())
            m_impl->http->set_ca_cert_path(t.ca_file.c_str());
    }
    m_impl->http->set_connection_timeout(std::chrono::seconds(5));
    m_impl->http->set_read_timeout(std::chrono::seconds(10));
    m_impl->http->set_keep_alive(true);
    if (!t.token.empty())
        m_impl->http->set_bearer_token_auth(t.token);
}

Client::~Client() = default;

std::string Client::where() const {
    const auto& t = m_impl->target;
    return t.url.empty() ? "unix:" + t.socket : t.url;
}

Result<Reply> Client::get(const std::string& path) {
    return call("GET", path, nullptr);
}
Result<Reply> Client::post(const std::string& path, const nlohmann::json& body) {
    return call("POST", path, &body);
}
Result<Reply> Client::patch(const std::string& path, const nlohmann::json& body) {
    return call("PATCH", path, &body);
}

Result<Reply> Client::call(const std::string& method, const std::string& path,
                           const nlohmann::json* body) {
    auto& http = *m_impl->http;
    const std::string text = body ? body->dump() : std::string();
    httplib::Result result = method == "GET" ? http.Get(path.c_str())
                             : method == "POST"
                                 ? http.Post(path.c_str(), text, "application/json")
                                 : http.Patch(path.c_str(), text, "application/json");
    if (!result) {
        // httplib keeps no errno: the socket's own answer says whether it is ours to use.
        if (m_impl->target.url.empty() && ::access(m_impl->target.socket.c_str(), W_OK) < 0 &&
            errno == EACCES)
            return Error{-ECONNREFUSED,
                         "cannot connect to prewarmd at " + where() +
                             ": permission denied (the socket is for root and the group "
                             "prewarmd: usermod -aG prewarmd USER; or read over "
                             "--url http://127.0.0.1:7433)"};
        if (result.error() == httplib::Error::Connection)
            return Error{-ECONNREFUSED, "cannot connect to prewarmd at " + where() +
                                            ": is it running? (systemctl status prewarmd)"};
        return Error{-ECONNREFUSED, "no answer from prewarmd at " + where() + " (" +
                                        httplib::to_string(result.error()) + ")"};
    }
    Reply reply;
    reply.status = result->status;
    reply.body = nlohmann::json::parse(result->body, nullptr, false);
    if (reply.body.is_discarded())
        reply.body = nullptr;
    return reply;
}

} // namespace prewarmd::ctl
