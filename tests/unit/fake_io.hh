// An in-memory disk behind the IoEngine interface, for engine tests: requests
// complete at the next reap, a hook can change any result (errors, short
// transfers) or act (pause the job at an offset), and everything is counted.
#pragma once

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <functional>
#include <optional>
#include <vector>

#include "io/device.hh"
#include "io/io_engine.hh"

class FakeDisk final : public prewarmd::DeviceProbe {
public:
    explicit FakeDisk(std::vector<char> content) : data(std::move(content)) {}
    prewarmd::Result<std::optional<uint64_t>> written_sectors() const override {
        if (count_unreadable)
            return prewarmd::Error{-EMFILE, "stat: Too many open files"};
        return std::optional<uint64_t>(sectors_written);
    }
    bool present() const override { return is_present; }

    std::vector<char> data;
    uint64_t sectors_written = 0; // by anyone, as the kernel would count
    bool count_unreadable = false; // the count cannot be read (EMFILE)
    bool is_present = true;
};

class FakeIo final : public prewarmd::IoEngine {
public:
    // Sees each request as it is performed: may return a result instead of doing
    // it, or shrink its length to make a short transfer.
    using Hook = std::function<std::optional<int64_t>(prewarmd::IoRequest&)>;

    explicit FakeIo(FakeDisk& disk) : m_disk(disk) {}
    std::string name() const override { return "fake"; }
    std::string register_buffers(std::span<const iovec>) override { return ""; }
    prewarmd::Result<void> set_idle_priority() override { return {}; }
    prewarmd::Result<void> watch(std::vector<int> fds) override {
        m_watch = std::move(fds);
        return {};
    }
    prewarmd::Result<void> queue(const prewarmd::IoRequest& r) override {
        m_queued.push_back(r);
        return {};
    }
    prewarmd::Result<void> commit() override {
        for (const auto& r : m_queued)
            m_in_flight.push_back(r);
        m_queued.clear();
        max_in_flight = std::max(max_in_flight, count_data_ops());
        return {};
    }
    prewarmd::Result<void> reap(std::vector<prewarmd::IoCompletion>& out,
                                std::optional<prewarmd::Clock::time_point> deadline) override {
        if (m_in_flight.empty()) {
            int timeout = -1;
            if (deadline) {
                const auto left = std::chrono::ceil<std::chrono::milliseconds>(
                    *deadline - prewarmd::Clock::now());
                timeout = static_cast<int>(std::clamp<int64_t>(left.count(), 0, INT_MAX));
            }
            std::vector<pollfd> pfds;
            for (const int fd : m_watch)
                pfds.push_back({fd, POLLIN, 0});
            ::poll(pfds.data(), pfds.size(), timeout);
            return {};
        }
        for (const auto& r : m_in_flight)
            out.push_back({r.tag, perform(r)});
        m_in_flight.clear();
        return {};
    }

    Hook hook;
    size_t max_in_flight = 0;
    unsigned fsyncs = 0;
    std::vector<prewarmd::Extent> writes; // as performed, in order
    std::vector<prewarmd::Extent> reads;

private:
    size_t count_data_ops() const {
        return static_cast<size_t>(
            std::count_if(m_in_flight.begin(), m_in_flight.end(),
                          [](auto& r) { return r.op != prewarmd::IoOp::fsync; }));
    }
    int64_t perform(prewarmd::IoRequest r) {
        if (hook)
            if (auto result = hook(r))
                return *result;
        switch (r.op) {
        case prewarmd::IoOp::fsync:
            ++fsyncs;
            return 0;
        case prewarmd::IoOp::read: {
            const uint64_t n = std::min<uint64_t>(r.length, m_disk.data.size() - r.offset);
            std::memcpy(r.buffer, m_disk.data.data() + r.offset, n);
            reads.push_back({r.offset, n});
            return static_cast<int64_t>(n);
        }
        case prewarmd::IoOp::write: {
            const uint64_t n = std::min<uint64_t>(r.length, m_disk.data.size() - r.offset);
            std::memcpy(m_disk.data.data() + r.offset, r.buffer, n);
            m_disk.sectors_written += (n + 511) / 512;
            writes.push_back({r.offset, n});
            return static_cast<int64_t>(n);
        }
        }
        return -EINVAL;
    }

    FakeDisk& m_disk;
    std::vector<int> m_watch;
    std::vector<prewarmd::IoRequest> m_queued;
    std::vector<prewarmd::IoRequest> m_in_flight;
};
