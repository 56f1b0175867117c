#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <fstream>

#include "api/access.hh"
#include "api/token.hh"
#include "base/unique_fd.hh"
#include "temp_dir.hh"

using namespace prewarmd;

namespace {

const Privileged group{1234, "prewarmd"};
const Credentials root{0, 0, {}};
const Credentials member{1000, 1000, {27, 1234}};
const Credentials stranger{65534, 65534, {}};

AccessDecision decide(WayIn way, bool changes, TokenGiven token = TokenGiven::none,
                      std::optional<Credentials> peer = std::nullopt) {
    return decide_access({way, changes, token, std::move(peer)}, group, "/var/lib/p/api.token");
}

} // namespace

TEST_CASE("access: reads are open on loopback and the socket, not elsewhere") {
    CHECK(decide(WayIn::loopback, false).status == 0);
    CHECK(decide(WayIn::unix_socket, false, TokenGiven::none, stranger).status == 0);
    CHECK(decide(WayIn::remote, false).status == 401);
    CHECK(decide(WayIn::remote, false, TokenGiven::wrong).status == 401);
    CHECK(decide(WayIn::remote, false, TokenGiven::valid).status == 0);
}

TEST_CASE("access: a change over TCP needs the token, loopback included") {
    const auto refused = decide(WayIn::loopback, true);
    CHECK(refused.status == 401);
    CHECK(refused.detail.find("/var/lib/p/api.token") != std::string::npos);
    CHECK(decide(WayIn::loopback, true, TokenGiven::wrong).status == 401);
    CHECK(decide(WayIn::loopback, true, TokenGiven::valid).status == 0);
    CHECK(decide(WayIn::remote, true).status == 401);
    CHECK(decide(WayIn::remote, true, TokenGiven::valid).status == 0);
}

TEST_CASE("access: over the socket, root and the group change; others need the token") {
    CHECK(decide(WayIn::unix_socket, true, TokenGiven::none, root).status == 0);
    CHECK(decide(WayIn::unix_socket, true, TokenGiven::none, member).status == 0);
    CHECK(decide(WayIn::unix_socket, true, TokenGiven::none, Credentials{1000, 1234, {}}).status ==
          0); // by the primary group
    const auto refused = decide(WayIn::unix_socket, true, TokenGiven::none, stranger);
    CHECK(refused.status == 403);
    CHECK(refused.detail.find("uid 65534") != std::string::npos);
    CHECK(decide(WayIn::unix_socket, true, TokenGiven::valid, stranger).status == 0);
    CHECK(decide(WayIn::unix_socket, true, TokenGiven::wrong, stranger).status == 401);
    // A root peer with a stale token still may.
    CHECK(decide(WayIn::unix_socket, true, TokenGiven::wrong, root).status == 0);
}

TEST_CASE("access: over the socket, an unknown peer is refused") {
    CHECK(decide(WayIn::unix_socket, true).status == 403);
}

TEST_CASE("access: without a group, only root changes over the socket") {
    const Privileged none;
    CHECK(decide_access({WayIn::unix_socket, true, TokenGiven::none, {member}}, none, "t").status ==
          403);
    CHECK(decide_access({WayIn::unix_socket, true, TokenGiven::none, {root}}, none, "t").status ==
          0);
}

TEST_CASE("access: the peer's credentials come from the socket itself") {
    TempDir dir;
    const auto path = dir.file("s.sock");
    UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
    REQUIRE(::bind(listener.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(listener.get(), 4) == 0);
    UniqueFd client(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    REQUIRE(::connect(client.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    UniqueFd accepted(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    REQUIRE(accepted);

    // The client is this very process: its uid, gid and groups.
    const auto peer = socket_credentials(accepted.get());
    REQUIRE(peer);
    CHECK(peer->uid == ::getuid());
    CHECK(peer->gid == ::getgid());
    std::vector<gid_t> groups(static_cast<size_t>(::getgroups(0, nullptr)));
    REQUIRE(::getgroups(static_cast<int>(groups.size()), groups.data()) >= 0);
    CHECK(peer->groups.size() == groups.size());
    // Not a socket: nothing to say (never root's word).
    UniqueFd file(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    CHECK_FALSE(socket_credentials(file.get()));
}

TEST_CASE("token: made once, 0600, loaded, matched in full only") {
    TempDir dir;
    const auto path = token_path("", dir.file("state"));
    CHECK(path == dir.file("state") + "/api.token");
    CHECK(token_path("/etc/x.token", "/var/lib/p") == "/etc/x.token");
    std::filesystem::create_directory(dir.file("state"));
    auto made = make_token_if_missing(path);
    REQUIRE(made.ok());
    CHECK(*made);
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    std::string text;
    std::getline(std::ifstream(path), text);
    CHECK(text.size() == 43);
    auto again = make_token_if_missing(path);
    REQUIRE(again.ok());
    CHECK_FALSE(*again);
    std::string same;
    std::getline(std::ifstream(path), same);
    CHECK(same == text);

    const auto digest = load_token(path);
    REQUIRE(digest.ok());
    CHECK(bearer_matches("Bearer " + text, *digest));
    CHECK_FALSE(bearer_matches(text, *digest));
    CHECK_FALSE(bearer_matches("Bearer " + text.substr(1), *digest));
    CHECK_FALSE(bearer_matches("Bearer " + text + "x", *digest));
    CHECK_FALSE(bearer_matches("bearer " + text, *digest));

    ::chmod(path.c_str(), 0640);
    const auto loose = load_token(path);
    REQUIRE_FALSE(loose.ok());
    CHECK(loose.error().message.find("chmod 600") != std::string::npos);

    // Another's file, or one in a directory others may write, could hold anyone's token.
    ::chmod(path.c_str(), 0600);
    REQUIRE(::chown(path.c_str(), 65534, static_cast<gid_t>(-1)) == 0);
    const auto foreign = load_token(path);
    REQUIRE_FALSE(foreign.ok());
    CHECK(foreign.error().message.find("owned by uid 65534") != std::string::npos);
    REQUIRE(::chown(path.c_str(), ::geteuid(), static_cast<gid_t>(-1)) == 0);
    const auto folder = path.substr(0, path.rfind('/'));
    ::chmod(folder.c_str(), 0777);
    const auto open_dir = load_token(path);
    ::chmod(folder.c_str(), 01777); // sticky: others cannot replace the file
    CHECK(load_token(path).ok());
    ::chmod(folder.c_str(), 0700);
    REQUIRE_FALSE(open_dir.ok());
    CHECK(open_dir.error().message.find("could be replaced") != std::string::npos);
}

TEST_CASE("refusals: logged once a minute per peer") {
    RefusalLog log;
    const auto t0 = Clock::now();
    CHECK(log.first_in_a_while("uid 65534", t0));
    CHECK_FALSE(log.first_in_a_while("uid 65534", t0 + std::chrono::seconds(30)));
    CHECK(log.first_in_a_while("127.0.0.1", t0 + std::chrono::seconds(30)));
    CHECK(log.first_in_a_while("uid 65534", t0 + std::chrono::seconds(61)));
}
