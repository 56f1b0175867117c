#include "job/probe_disk.hh"

#include <cerrno>

#include "io/device.hh"
#include "job/work.hh"
#include "safety/classify.hh"
#include "safety/system.hh"

namespace prewarmd {

Result<ProbeFigures> probe_disk(const DiskInfo& disk, const ProbeFigures& before) {
    auto device = Device::open(disk.devnode, Device::Access::write);
    if (!device)
        return device.error();
    if (auto same = same_disk(disk, *device); !same)
        return same.error();
    const auto verdict = classify(disk, device->fd(), SystemView::read());
    if (verdict.verdict == Verdict::refused)
        return Error{-EBUSY, "refused: " + verdict.reasons_text()};
    ProbeFigures after = before;
    if (before.cold) {
        auto warm = probe_warm(*device, before.cold->strides);
        if (!warm)
            return warm.error();
        after.warm = *warm;
    } else {
        auto cold = probe_cold(*device, ProbeOptions{});
        if (!cold)
            return cold.error();
        after.cold = *cold;
    }
    return after;
}

} // namespace prewarmd
