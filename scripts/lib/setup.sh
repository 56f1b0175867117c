# Shared by scripts/test and scripts/demo: install what is missing, build.
# Quiet when there is nothing to do; on failure, shows the log that explains it.

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

die() {
    echo "$(basename "$0"): $*" >&2
    exit 1
}

# This machine's Debian release: 12, 13, ...
debian_release() {
    (. /etc/os-release && echo "${VERSION_ID:-unknown}")
}

# The packages of scripts/apt-packages.txt for this release, a name a line.
wanted_packages() {
    local release
    release=$(debian_release)
    sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$root/scripts/apt-packages.txt" |
        awk -v r="[$release]" 'NF == 1 || $2 == r { print $1 }'
}

# Installs the packages of scripts/apt-packages.txt that are not installed yet.
ensure_packages() {
    local -a wanted=() missing=()
    mapfile -t wanted < <(wanted_packages)
    local p
    for p in "${wanted[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
            missing+=("$p")
    done
    ((${#missing[@]})) || return 0
    [[ $(id -u) == 0 ]] || die "missing packages: ${missing[*]} (run as root to install them)"
    echo "Installing ${missing[*]}"
    local log
    log=$(mktemp)
    export DEBIAN_FRONTEND=noninteractive
    if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } \
        >"$log" 2>&1; then
        cat "$log" >&2
        rm -f "$log"
        die "apt-get could not install ${missing[*]}"
    fi
    rm -f "$log"
}

# Configures (once) and builds a CMake preset: release by default, into build/.
build() {
    local preset=${1:-release} log
    log=$(mktemp)
    # Presets are found from the working directory: the source tree's.
    if ! (cd "$root" && cmake --preset "$preset" && cmake --build --preset "$preset") \
        >"$log" 2>&1; then
        cat "$log" >&2
        rm -f "$log"
        die "the build failed"
    fi
    rm -f "$log"
}
