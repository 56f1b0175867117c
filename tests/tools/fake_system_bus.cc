// Stand-ins for systemd and logind on a test bus: the parts of their D-Bus APIs that
// prewarmd uses, driven by commands on stdin and reporting what prewarmd did on
// stdout, a line each.
//
// usage: fake_system_bus ADDRESS [--state STATE] [--no-logind]
//   STATE: systemd's SystemState at start (default "starting")
// stdin:  boot-finished | shutdown true|false | sleep true|false
// stdout: ready | subscribed | inhibit WHAT MODE (id N) | released N
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <sdbus-c++/sdbus-c++.h>

namespace {

constexpr const char* systemd_manager = "org.freedesktop.systemd1.Manager";
constexpr const char* logind_manager = "org.freedesktop.login1.Manager";

void say(const std::string& line) {
    std::cout << line << std::endl;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::cerr << "usage: fake_system_bus ADDRESS [--state STATE] [--no-logind]\n";
        return 2;
    }
    std::string state = "starting";
    bool logind = true;
    for (int i = 2; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--state" && i + 1 < argc)
            state = argv[++i];
        else if (arg == "--no-logind")
            logind = false;
        else {
            std::cerr << "fake_system_bus: unknown argument " << arg << "\n";
            return 2;
        }
    }
    auto connection = sdbus::createSessionBusConnectionWithAddress(argv[1]);

    auto systemd = sdbus::createObject(*connection, "/org/freedesktop/systemd1");
    systemd->registerMethod("Subscribe").onInterface(systemd_manager).implementedAs([] {
        say("subscribed");
    });
    systemd->registerProperty("SystemState").onInterface(systemd_manager).withGetter([&state] {
        return state;
    });
    systemd->registerSignal("StartupFinished")
        .onInterface(systemd_manager)
        .withParameters<uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t>();
    systemd->finishRegistration();
    connection->requestName("org.freedesktop.systemd1");

    // Each inhibitor: the read end of a pipe whose write end the caller holds.
    std::map<int, int> inhibitors; // read fd -> id
    int next_id = 1;
    std::unique_ptr<sdbus::IObject> login;
    if (logind) {
        login = sdbus::createObject(*connection, "/org/freedesktop/login1");
        login->registerMethod("Inhibit")
            .onInterface(logind_manager)
            .implementedAs([&](const std::string& what, const std::string& who,
                               const std::string& why, const std::string& mode) {
                int ends[2];
                if (::pipe2(ends, O_CLOEXEC) < 0)
                    throw sdbus::Error("org.freedesktop.DBus.Error.Failed", "pipe2 failed");
                const int id = next_id++;
                inhibitors[ends[0]] = id;
                say("inhibit " + what + " " + mode + " (id " + std::to_string(id) + ") by " + who +
                    ": " + why);
                return sdbus::UnixFd(ends[1], sdbus::adopt_fd);
            });
        login->registerSignal("PrepareForShutdown")
            .onInterface(logind_manager)
            .withParameters<bool>();
        login->registerSignal("PrepareForSleep").onInterface(logind_manager).withParameters<bool>();
        login->finishRegistration();
        connection->requestName("org.freedesktop.login1");
    }
    say("ready");

    std::string pending;
    for (;;) {
        const auto bus = connection->getEventLoopPollData();
        std::vector<pollfd> fds = {{STDIN_FILENO, POLLIN, 0}, {bus.fd, bus.events, 0}};
        for (const auto& [fd, id] : inhibitors)
            fds.push_back({fd, POLLIN, 0});
        int timeout = -1;
        if (bus.timeout_usec != UINT64_MAX) {
            timespec now{};
            ::clock_gettime(CLOCK_MONOTONIC, &now);
            const int64_t now_usec = now.tv_sec * 1000000LL + now.tv_nsec / 1000;
            timeout = static_cast<int>(std::max<int64_t>(
                0, (static_cast<int64_t>(bus.timeout_usec) - now_usec + 999) / 1000));
        }
        if (::poll(fds.data(), fds.size(), timeout) < 0)
            continue;
        while (connection->processPendingRequest()) {
        }
        for (size_t i = 2; i < fds.size(); ++i)
            if (fds[i].revents) {
                say("released " + std::to_string(inhibitors[fds[i].fd]));
                ::close(fds[i].fd);
                inhibitors.erase(fds[i].fd);
            }
        if (!(fds[0].revents & (POLLIN | POLLHUP)))
            continue;
        char buffer[256];
        const ssize_t n = ::read(STDIN_FILENO, buffer, sizeof buffer);
        if (n <= 0)
            return 0; // stdin closed: the test is over
        pending.append(buffer, static_cast<size_t>(n));
        for (size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1)) {
            const auto command = pending.substr(0, nl);
            if (command == "boot-finished") {
                state = "running";
                systemd->emitSignal("StartupFinished")
                    .onInterface(systemd_manager)
                    .withArguments(uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{4}, uint64_t{5},
                                   uint64_t{6});
            } else if (login && (command == "shutdown true" || command == "shutdown false")) {
                login->emitSignal("PrepareForShutdown")
                    .onInterface(logind_manager)
                    .withArguments(command == "shutdown true");
            } else if (login && (command == "sleep true" || command == "sleep false")) {
                login->emitSignal("PrepareForSleep")
                    .onInterface(logind_manager)
                    .withArguments(command == "sleep true");
            } else {
                say("unknown command: " + command);
                continue;
            }
            say("done " + command);
        }
    }
}
