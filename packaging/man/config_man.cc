// Writes a man page from its template: the line "@OPTIONS@" becomes the option
// table's reference (config_reference_roff, for prewarmd.toml(5)), "@SETTINGS@"
// prewarmctl's set commands (setting_commands_roff, for prewarmctl(1)); so the
// pages cannot drift from the settings. Usage: config_man TEMPLATE OUTPUT
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "config/config.hh"

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: config_man TEMPLATE OUTPUT\n");
        return 2;
    }
    std::ifstream in(argv[1]);
    if (!in) {
        std::fprintf(stderr, "config_man: cannot read %s\n", argv[1]);
        return 1;
    }
    std::ostringstream page;
    bool placed = false;
    for (std::string line; std::getline(in, line);) {
        if (line == "@OPTIONS@" || line == "@SETTINGS@") {
            page << (line == "@OPTIONS@" ? prewarmd::config_reference_roff()
                                         : prewarmd::setting_commands_roff());
            placed = true;
        } else {
            page << line << '\n';
        }
    }
    if (!placed) {
        std::fprintf(stderr, "config_man: no @OPTIONS@ or @SETTINGS@ line in %s\n", argv[1]);
        return 1;
    }
    std::ofstream out(argv[2]);
    out << page.str();
    if (!out.flush()) {
        std::fprintf(stderr, "config_man: cannot write %s\n", argv[2]);
        return 1;
    }
    return 0;
}
