// The daemon's log: the journal when JOURNAL_STREAM says systemd holds our stderr,
// else stderr. One line per decision, with the disk's id.
#pragma once

#include <string>

namespace prewarmd {

void setup_log(const std::string& level);
void set_log_level(const std::string& level);
void log_info(const std::string& line);
void log_warning(const std::string& line);
void log_error(const std::string& line);
void log_debug(const std::string& line);
// A warning or an info line: the shape the daemon's pieces take for their log.
void log_line(bool warning, const std::string& line);

} // namespace prewarmd
