// Prints the routes the API serves, one "METHOD PATH" a line, for the contract test.
#include <cstdio>

#include "api/router.hh"

int main() {
    for (const auto& route : prewarmd::ApiRouter::routes())
        std::printf("%.*s %.*s\n", static_cast<int>(route.method.size()), route.method.data(),
                    static_cast<int>(route.path.size()), route.path.data());
}
