// A file of the source tree, as text ("" when it cannot be read).
#pragma once

#include <fstream>
#include <sstream>
#include <string>

inline std::string source_file(const std::string& path) {
    std::ifstream in(std::string(PREWARMD_SOURCE_DIR) + "/" + path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}
