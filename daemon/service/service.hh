// `prewarmd run`: the service. Start-up in systemd's order (the udev monitor, then
// the enumeration, then READY=1), one event loop, and SIGTERM leaving every job
// checkpointed to resume at the next start.
#pragma once

#include <optional>
#include <string>

#include "base/result.hh"
#include "config/config.hh"

namespace prewarmd {

struct ServiceOptions {
    std::string config_path = "/etc/prewarmd/prewarmd.toml";
    bool config_given = false; // then it must exist
    std::optional<std::string> state_dir;
};

// Everything in `config` that `prewarmd run` refuses to start with, found without
// starting anything: what `prewarmd config --check` says too.
Result<void> check_config(const Config& config);

// Exit codes: 0 stopped by SIGTERM or SIGINT; 1 a failure at run time; 2 the
// configuration is wrong; 3 another prewarmd uses the state directory.
int run_service(const ServiceOptions& options);

} // namespace prewarmd
