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

#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dbus/sdbus_compat.hh"
#include "fake_system_bus_adaptor.hh" // generated from tests/tools/fake_system_bus.xml

namespace {

using prewarmd::sdbus_compat::ServiceName;

void say(const std::string& line) {
    std::cout << line << std::endl;
}

class Systemd final : public sdbus::AdaptorInterfaces<org::freedesktop::systemd1::Manager_adaptor> {
public:
    Systemd(sdbus::IConnection& connection, std::string state)
        : AdaptorInterfaces(connection, sdbus::ObjectPath("/org/freedesktop/systemd1")),
          m_state(std::move(state)) {
        registerAdaptor();
    }
    ~Systemd() { unregisterAdaptor(); }

    void boot_finished() {
        m_state = "running";
        emitStartupFinished(1, 2, 3, 4, 5, 6);
    }

private:
    void Subscribe() override { say("subscribed"); }
    std::string SystemState() override { return m_state; }

    std::string m_state;
};

// Each inhibitor: the read end of a pipe whose write end the caller holds.
class Logind final : public sdbus::AdaptorInterfaces<org::freedesktop::login1::Manager_adaptor> {
public:
    explicit Logind(sdbus::IConnection& connection)
        : AdaptorInterfaces(connection, sdbus::ObjectPath("/org/freedesktop/login1")) {
        registerAdaptor();
    }
    ~Logind() { unregisterAdaptor(); }

    std::map<int, int> inhibitors; // read fd -> id

private:
    sdbus::UnixFd Inhibit(const std::string& what, const std::string& who, const std::string& why,
                          const std::string& mode) override {
        int ends[2];
        if (::pipe2(ends, O_CLOEXEC) < 0)
            throw prewarmd::sdbus_compat::error("org.freedesktop.DBus.Error.Failed",
                                                "pipe2 failed");
        const int id = m_next_id++;
        inhibitors[ends[0]] = id;
        say("inhibit " + what + " " + mode + " (id " + std::to_string(id) + ") by " + who + ": " +
            why);
        return sdbus::UnixFd(ends[1], sdbus::adopt_fd);
    }

    int m_next_id = 1;
};

int poll_timeout(const prewarmd::sdbus_compat::PollData& bus) {
    if (!bus.deadline)
        return -1;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(
        *bus.deadline - std::chrono::steady_clock::now());
    return static_cast<int>(std::max<int64_t>(0, left.count()));
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::cerr << "usage: fake_system_bus ADDRESS [--state STATE] [--no-logind]\n";
        return 2;
    }
    std::string state = "starting";
    bool with_logind = true;
    for (int i = 2; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--state" && i + 1 < argc)
            state = argv[++i];
        else if (arg == "--no-logind")
            with_logind = false;
        else {
            std::cerr << "fake_system_bus: unknown argument " << arg << "\n";
            return 2;
        }
    }
    auto connection = sdbus::createSessionBusConnectionWithAddress(argv[1]);
    Systemd systemd(*connection, state);
    connection->requestName(ServiceName("org.freedesktop.systemd1"));
    std::unique_ptr<Logind> logind;
    if (with_logind) {
        logind = std::make_unique<Logind>(*connection);
        connection->requestName(ServiceName("org.freedesktop.login1"));
    }
    say("ready");

    std::string pending;
    for (;;) {
        const auto bus = prewarmd::sdbus_compat::poll_data(*connection);
        std::vector<pollfd> fds = {{STDIN_FILENO, POLLIN, 0}, {bus.fd, bus.events, 0}};
        if (bus.wake_fd >= 0)
            fds.push_back({bus.wake_fd, POLLIN, 0});
        const size_t first_inhibitor = fds.size();
        if (logind)
            for (const auto& [fd, id] : logind->inhibitors)
                fds.push_back({fd, POLLIN, 0});
        if (::poll(fds.data(), fds.size(), poll_timeout(bus)) < 0)
            continue;
        while (prewarmd::sdbus_compat::process_one(*connection)) {
        }
        for (size_t i = first_inhibitor; i < fds.size(); ++i)
            if (fds[i].revents) {
                say("released " + std::to_string(logind->inhibitors[fds[i].fd]));
                ::close(fds[i].fd);
                logind->inhibitors.erase(fds[i].fd);
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
                systemd.boot_finished();
            } else if (logind && (command == "shutdown true" || command == "shutdown false")) {
                logind->emitPrepareForShutdown(command == "shutdown true");
            } else if (logind && (command == "sleep true" || command == "sleep false")) {
                logind->emitPrepareForSleep(command == "sleep true");
            } else {
                say("unknown command: " + command);
                continue;
            }
            say("done " + command);
        }
    }
}
