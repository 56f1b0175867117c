#include <doctest/doctest.h>

#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <thread>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/sysfs.hh"
#include "base/unique_fd.hh"
#include "temp_dir.hh"

// The service as systemd sees it: READY=1 once discovery runs, a STATUS= line,
// STOPPING=1 and exit 0 on SIGTERM; a second daemon on the same state directory and
// a broken config are refused with their exit codes.
namespace {

struct Daemon {
    pid_t pid = 0;
    std::string log;
};

// The daemon never meets the machine's own API port or socket, or its system bus.
Daemon start_daemon(const TempDir& dir, const std::string& config, const std::string& notify) {
    std::ofstream(dir.file("prewarmd.toml"))
        << config
        << (config.find("[api]") == std::string::npos ? "\n[api]\nlisten = []\nsocket = \"\"\n"
                                                      : "")
        << "\n[dbus]\nenabled = false\n";
    const std::string bin = std::string(PREWARMD_BIN_DIR) + "/prewarmd";
    const auto config_path = dir.file("prewarmd.toml");
    const auto state = dir.file("state");
    const auto log = dir.file("log." + std::to_string(::rand()));
    std::vector<std::string> args{bin, "run", "--config", config_path, "--state-dir", state};
    std::vector<char*> argv;
    for (auto& a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    std::string env_notify = "NOTIFY_SOCKET=" + notify;
    char* envp[] = {env_notify.data(), nullptr};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT, 0600);
    Daemon d;
    d.log = log;
    REQUIRE(::posix_spawn(&d.pid, bin.c_str(), &actions, nullptr, argv.data(), envp) == 0);
    posix_spawn_file_actions_destroy(&actions);
    return d;
}

int exit_status(pid_t pid) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string read_log(const Daemon& d) {
    return prewarmd::read_text(d.log);
}

// Datagrams until one holds `wanted`, for up to 10 s; all of them, concatenated.
std::string receive_until(int socket, const std::string& wanted) {
    std::string all;
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (all.find(wanted) == std::string::npos && std::chrono::steady_clock::now() < end) {
        pollfd pfd{socket, POLLIN, 0};
        if (::poll(&pfd, 1, 100) <= 0)
            continue;
        char buffer[4096];
        const ssize_t n = ::recv(socket, buffer, sizeof buffer, 0);
        if (n > 0)
            all += std::string(buffer, static_cast<size_t>(n)) + "\n";
    }
    return all;
}

} // namespace

TEST_CASE("service: READY=1, STATUS=, then STOPPING=1 and exit 0 on SIGTERM") {
    TempDir dir;
    const auto notify = dir.file("notify");
    prewarmd::UniqueFd socket(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", notify.c_str());
    REQUIRE(::bind(socket.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);

    // Matches nothing: the test needs no disks.
    auto daemon = start_daemon(dir, "[discovery]\nmatch = [\"name:nothing-here\"]\n", notify);
    const auto ready = receive_until(socket.get(), "READY=1");
    CHECK(ready.find("READY=1") != std::string::npos);
    const auto status = ready + receive_until(socket.get(), "STATUS=");
    CHECK(status.find("STATUS=idle") != std::string::npos);

    SUBCASE("a second daemon on the same state directory is refused") {
        auto second = start_daemon(dir, "[discovery]\nmatch = [\"name:nothing-here\"]\n", notify);
        CHECK(exit_status(second.pid) == 3);
        CHECK(read_log(second).find("another prewarmd (pid " + std::to_string(daemon.pid) +
                                    ") uses the state directory") != std::string::npos);
    }

    ::kill(daemon.pid, SIGTERM);
    const auto stopping = receive_until(socket.get(), "STOPPING=1");
    CHECK(stopping.find("STOPPING=1") != std::string::npos);
    CHECK(exit_status(daemon.pid) == 0);
    CHECK(read_log(daemon).find("stopped") != std::string::npos);
}

TEST_CASE("service: a broken config exits 2 naming the file, the line and the key") {
    TempDir dir;
    auto daemon = start_daemon(dir, "[prefill]\nmax_parallel = \"two\"\n", dir.file("none"));
    CHECK(exit_status(daemon.pid) == 2);
    CHECK(read_log(daemon).find(dir.file("prewarmd.toml") +
                                ":2: [prefill] max_parallel: expected a whole number") !=
          std::string::npos);
}
