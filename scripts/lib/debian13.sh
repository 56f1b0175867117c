# The Debian 13 part of scripts/test, run from a Debian 12 machine: a trixie root
# made by debootstrap (kept under /var/tmp between runs, made again when missing),
# the source tree bound into it at the same path with /proc, /sys, /dev and /run,
# and there: the packages of scripts/apt-packages.txt for Debian 13, the build with
# the debian13 preset (Debian 13's compiler and libraries, into build-debian13/),
# and the tests of the debian13 test preset (the unit tests, the package test, the
# daemon, API and D-Bus end-to-end tests). The machine's own kernel runs them, as
# in a container. Sourced after scripts/lib/setup.sh.

debian13_dir=${PREWARMD_DEBIAN13_ROOT:-/var/tmp/prewarmd-debian13}
debian13_mirror=http://deb.debian.org/debian
debian13_mounts=()

# Unmounts what debian13_mount bound, in reverse order; and anything still mounted
# under the root from a run that was killed, deepest first.
debian13_unmount() {
    local i target
    for ((i = ${#debian13_mounts[@]} - 1; i >= 0; i--)); do
        umount "${debian13_mounts[i]}" 2>/dev/null || umount -l "${debian13_mounts[i]}" || true
    done
    debian13_mounts=()
    for target in $(findmnt -rn -o TARGET | grep -F "$debian13_dir/" | sort -r); do
        umount "$target" 2>/dev/null || umount -l "$target" || true
    done
}

# Makes the root unless a finished one is there: into a new folder, renamed when
# complete, so an interrupted run leaves nothing that looks finished.
debian13_make_root() {
    [[ -e $debian13_dir/.prewarmd-root ]] && return 0
    debian13_unmount
    # rm -rf must never reach into a bound /dev or source tree.
    ! findmnt -rn -o TARGET | grep -qF "$debian13_dir" ||
        die "still mounted under $debian13_dir: $(findmnt -rn -o TARGET | grep -F "$debian13_dir")"
    local log
    log=$(mktemp)
    echo "Making the Debian 13 root in $debian13_dir (debootstrap, a few minutes)"
    rm -rf --one-file-system "$debian13_dir.new"
    if ! debootstrap --variant=minbase trixie "$debian13_dir.new" "$debian13_mirror" >"$log" 2>&1; then
        tail -30 "$log" >&2
        rm -f "$log"
        die "debootstrap trixie failed"
    fi
    rm -f "$log"
    touch "$debian13_dir.new/.prewarmd-root"
    rm -rf --one-file-system "$debian13_dir"
    mv "$debian13_dir.new" "$debian13_dir"
}

debian13_bind() { # SOURCE (a path of this machine, bound at the same path inside)
    mkdir -p "$debian13_dir$1"
    mount --bind "$1" "$debian13_dir$1"
    debian13_mounts+=("$debian13_dir$1")
}

debian13_mount() {
    local path
    for path in /proc /sys /dev /dev/pts /dev/shm /run "$root"; do
        debian13_bind "$path"
    done
    # Name lookups for apt, as on this machine.
    cp -L /etc/resolv.conf "$debian13_dir/etc/resolv.conf"
}

# Runs COMMAND (bash) in the root, in the source tree, with setup.sh's functions;
# its status is the command's. The mounts go at its end, also when it fails or is
# interrupted.
debian13_run() { # COMMAND
    [[ $(id -u) == 0 ]] || die "the Debian 13 part needs root (debootstrap, chroot, mounts)"
    trap 'debian13_unmount' EXIT
    trap 'debian13_unmount; exit 130' INT
    trap 'debian13_unmount; exit 143' TERM
    debian13_mount
    local status=0
    chroot "$debian13_dir" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
        LANG=C.UTF-8 TERM="${TERM:-dumb}" bash -c '
            set -euo pipefail
            cd "$1"
            source scripts/lib/setup.sh
            eval "$2"' debian13 "$root" "$1" || status=$?
    debian13_unmount
    trap - EXIT INT TERM
    return "$status"
}

# The root with its packages: slow only the first time on a machine (downloads),
# so scripts/test runs it beside this machine's build.
debian13_prepare() {
    command -v debootstrap >/dev/null || die "no debootstrap (package debootstrap)"
    debian13_make_root
    debian13_run ensure_packages
}

# The build and the tests, in the prepared root.
debian13_test() {
    debian13_run 'build debian13 && ctest --preset debian13 --parallel 2'
}
