// libFuzzer target: the API's routing and body parsing, no sockets. The input is
// a method selector byte, then the path, the content type and the body, split at
// the first two newlines. Beyond crashes, leaks and undefined behaviour, it stops
// on a broken promise: a status out of range, a JSON response that does not parse,
// a problem whose "status" differs from the response's, a refusal that acted.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/router.hh"
#include "fake_api_backend.hh"

using namespace prewarmd;

namespace {

void require(bool ok) {
    if (!ok)
        std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static constexpr std::string_view methods[] = {"GET",    "POST", "PATCH",   "PUT",
                                                   "DELETE", "HEAD", "OPTIONS", "BREW"};
    if (size == 0)
        return 0;
    std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
    const auto take_line = [&input] {
        const auto end = input.find('\n');
        const auto line = input.substr(0, end);
        input = end == std::string_view::npos ? std::string_view() : input.substr(end + 1);
        return std::string(line);
    };
    ApiRequest request;
    request.method = methods[data[0] % std::size(methods)];
    request.path = take_line();
    request.content_type = take_line();
    request.body = std::string(input);

    FakeBackend backend;
    backend.act_error = (data[0] & 0x80) ? -EBUSY : 0;
    backend.busy = (data[0] & 0x40) != 0;
    ApiRouter router(backend);
    const auto response = router.handle(request);

    require(response.status >= 200 && response.status <= 599);
    if (response.content_type == "application/json" ||
        response.content_type == "application/problem+json") {
        const auto body = nlohmann::json::parse(response.body, nullptr, false);
        require(!body.is_discarded());
        if (response.content_type == "application/problem+json")
            require(body.at("status") == response.status);
    }
    if (response.status >= 400)
        require(backend.actions.empty() && backend.updates == 0);
    return 0;
}
