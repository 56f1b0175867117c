#include "service/log.hh"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/systemd_sink.h>
#include <spdlog/spdlog.h>

namespace prewarmd {
namespace {

// JOURNAL_STREAM is "DEVICE:INODE" of the stream systemd connected to our stderr.
bool stderr_is_journal() {
    const char* stream = std::getenv("JOURNAL_STREAM");
    if (!stream)
        return false;
    struct stat st {};
    if (::fstat(STDERR_FILENO, &st) < 0)
        return false;
    return std::string(stream) == std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

spdlog::level::level_enum level_of(const std::string& name) {
    if (name == "debug")
        return spdlog::level::debug;
    if (name == "warning")
        return spdlog::level::warn;
    return spdlog::level::info;
}

} // namespace

void setup_log(const std::string& level) {
    std::shared_ptr<spdlog::logger> logger;
    if (stderr_is_journal()) {
        logger = std::make_shared<spdlog::logger>(
            "prewarmd", std::make_shared<spdlog::sinks::systemd_sink_mt>("prewarmd"));
        logger->set_pattern("%v");
    } else {
        logger = std::make_shared<spdlog::logger>(
            "prewarmd", std::make_shared<spdlog::sinks::stderr_sink_mt>());
        logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %l: %v");
    }
    logger->set_level(level_of(level));
    logger->flush_on(spdlog::level::debug);
    spdlog::set_default_logger(logger);
}

void set_log_level(const std::string& level) {
    spdlog::set_level(level_of(level));
}
void log_info(const std::string& line) {
    spdlog::info("{}", line);
}
void log_warning(const std::string& line) {
    spdlog::warn("{}", line);
}
void log_error(const std::string& line) {
    spdlog::error("{}", line);
}
void log_debug(const std::string& line) {
    spdlog::debug("{}", line);
}

void log_line(bool warning, const std::string& line) {
    warning ? log_warning(line) : log_info(line);
}

} // namespace prewarmd
