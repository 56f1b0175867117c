# The .deb: cpack builds it, lintian finds no error in it, dpkg installs it (the
# files, the conffile, the unit enabled, the group prewarmd, `prewarmd --version`),
# the unit's command starts (a stand-in for systemd: the token file and the
# socket's group), and removing then purging it leaves nothing behind.
source "$(dirname "$0")/lib.sh"
[[ $(id -u) == 0 ]] || cannot_run "needs root to install a package"
for tool in dpkg dpkg-query cpack lintian deb-systemd-helper; do
    command -v "$tool" >/dev/null || cannot_run "no $tool"
done
# Never replace a prewarmd someone installed on this machine.
if dpkg-query -W -f='${db:Status-Status}' prewarmd 2>/dev/null | grep -qv not-installed; then
    cannot_run "a prewarmd package is installed here; the test would replace it"
fi
build=$(dirname "$PREWARMD_BIN")
group_before=$(getent group prewarmd || true)

cpack --config "$build/CPackConfig.cmake" -G DEB -B "$TEST_DIR/pkg" >"$TEST_DIR/cpack" 2>&1 ||
    fail "cpack: $(tail -20 "$TEST_DIR/cpack")"
deb=$(ls "$TEST_DIR"/pkg/prewarmd_*.deb)
pass "built $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"
version=$(dpkg-deb -f "$deb" Version)
release=$(. /etc/os-release && echo "$VERSION_ID")
check_eq "$version" "$(/usr/bin/env "$PREWARMD_BIN/prewarmd" --version | cut -d' ' -f2)~deb${release}u1" \
    "the version: the program's, for this Debian release"
# Depends names the package of every library the program links (libsdbus-c++1 on
# Debian 12, libsdbus-c++2 on 13, ...): what shlibdeps found, checked here.
depends=$(dpkg-deb -f "$deb" Depends)
# Into a file first: an awk that stops reading early would SIGPIPE ldconfig (pipefail).
ldconfig -p >"$TEST_DIR/ldconfig"
names=" $(sed -E 's/ *\([^)]*\)//g; s/,/ /g' <<<"$depends") " # the packages, no versions
[[ $names == *" init-system-helpers "* ]] || fail "Depends: no init-system-helpers: $depends"
for lib in $(objdump -p "$PREWARMD_BIN/prewarmd" | awk '/NEEDED/ {print $2}'); do
    path=$(awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}' "$TEST_DIR/ldconfig")
    owner=$(dpkg -S "$path" 2>/dev/null || dpkg -S "$(realpath "$path")" 2>/dev/null || true)
    package=${owner%%:*}
    [[ -n $package ]] || fail "no package owns $lib ($path)"
    # The package, or a name it provides (libspdlog1.10 provides libspdlog1.10-fmt9).
    provides=$(dpkg-query -W -f='${Provides}' "$package" | sed -E 's/ *\([^)]*\)//g; s/,/ /g')
    found=
    for name in $package $provides; do [[ $names == *" $name "* ]] && found=$name; done
    [[ -n $found ]] || fail "Depends lacks $package (for $lib): $depends"
done
pass "Depends: $depends"

# lintian: an error or a warning fails; its info tags are printed.
run_status lintian --tag-display-limit 0 --display-info --fail-on error,warning "$deb" \
    >"$TEST_DIR/lintian" 2>&1
cat "$TEST_DIR/lintian"
check_eq "$status" 0 "lintian's exit status (errors or warnings)"

on_cleanup "dpkg --purge prewarmd >/dev/null 2>&1 || true"
dpkg --install "$deb" >"$TEST_DIR/dpkg" 2>&1 || fail "dpkg --install: $(cat "$TEST_DIR/dpkg")"
# /lib/systemd/system on Debian 12, /usr/lib/systemd/system on 13: as systemd.pc says.
unit=$(dpkg-deb -c "$deb" | awk '{print $NF}' | sed -n 's|^\./\(.*/systemd/system/prewarmd.service\)$|/\1|p')
[[ -n $unit ]] || fail "no prewarmd.service in the package"
files=(/usr/sbin/prewarmd /usr/bin/prewarmctl "$unit" "${unit%.service}.socket"
    /etc/prewarmd/prewarmd.toml /usr/share/dbus-1/system.d/org.prewarmd.Prewarmd1.conf
    /usr/share/man/man8/prewarmd.8.gz /usr/share/man/man1/prewarmctl.1.gz
    /usr/share/man/man5/prewarmd.toml.5.gz /usr/share/bash-completion/completions/prewarmctl
    /usr/share/doc/prewarmd/copyright /usr/lib/sysusers.d/prewarmd.conf
    /usr/share/prewarmd/prometheus/prewarmd.rules.yml)
for f in "${files[@]}"; do [[ -e $f ]] || fail "not installed: $f"; done
pass "installed: ${#files[@]} files checked"
dpkg-query -W -f='${Conffiles}\n' prewarmd | grep -q "^ /etc/prewarmd/prewarmd.toml " ||
    fail "the config is not a conffile: $(dpkg-query -W -f='${Conffiles}' prewarmd)"
pass "/etc/prewarmd/prewarmd.toml is a conffile"
[[ -L /etc/systemd/system/multi-user.target.wants/prewarmd.service ]] || fail "the unit is not enabled"
[[ -L /etc/systemd/system/sockets.target.wants/prewarmd.socket ]] || fail "the socket is not enabled"
pass "prewarmd.service and prewarmd.socket enabled"
check_eq "$(/usr/sbin/prewarmd --version)" "prewarmd ${version%%~*}" "prewarmd --version"
/usr/sbin/prewarmd config --check /etc/prewarmd/prewarmd.toml >/dev/null ||
    fail "the installed config does not check"
pass "the installed config checks"
man -l /usr/share/man/man5/prewarmd.toml.5.gz >"$TEST_DIR/man" 2>/dev/null
grep -q "attach_grace" "$TEST_DIR/man" ||
    fail "prewarmd.toml(5) does not list attach_grace"
pass "prewarmd.toml(5) lists the settings"
getent group prewarmd >/dev/null || fail "no group prewarmd after the installation"
pass "the group prewarmd: $(getent group prewarmd)"

# The unit's own command, as systemd would run it (here without systemd as PID 1):
# at its first start it makes the API token, readable by root only.
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
[[ -n $exec_start ]] || fail "no ExecStart in the unit"
mkdir -p /var/lib/prewarmd && chmod 700 /var/lib/prewarmd # StateDirectory=, as systemd would
$exec_start >"$TEST_DIR/service.log" 2>&1 &
service=$!
on_cleanup "kill $service 2>/dev/null; wait $service 2>/dev/null || true"
for _ in $(seq 100); do
    [[ -S /run/prewarmd/api.sock ]] && break
    kill -0 "$service" 2>/dev/null || fail "the service died: $(cat "$TEST_DIR/service.log")"
    sleep 0.1
done
[[ -S /run/prewarmd/api.sock ]] || fail "no socket after 10 s: $(cat "$TEST_DIR/service.log")"
check_eq "$(stat -c '%a %U' /var/lib/prewarmd/api.token)" "600 root" "the token file at the first start"
check_eq "$(stat -c '%a %G' /run/prewarmd/api.sock)" "660 prewarmd" "the socket's mode and group"
check_eq "$(/usr/bin/prewarmctl --json settings | jq -r .auto_prefill)" blank "prewarmctl as root, no token"
kill -TERM "$service"
wait "$service" || fail "the service did not stop cleanly: $(cat "$TEST_DIR/service.log")"
pass "the service stopped on SIGTERM"

dpkg --remove prewarmd >"$TEST_DIR/dpkg" 2>&1 || fail "dpkg --remove: $(cat "$TEST_DIR/dpkg")"
[[ ! -e /usr/sbin/prewarmd && -e /etc/prewarmd/prewarmd.toml ]] ||
    fail "after remove: the program should be gone and the conffile kept"
pass "removed: the program gone, the conffile kept"
mkdir -p /var/lib/prewarmd/jobs # as the service would have made it
dpkg --purge prewarmd >"$TEST_DIR/dpkg" 2>&1 || fail "dpkg --purge: $(cat "$TEST_DIR/dpkg")"
left=()
for f in "${files[@]}" /etc/prewarmd /var/lib/prewarmd /etc/systemd/system/multi-user.target.wants/prewarmd.service \
    /etc/systemd/system/sockets.target.wants/prewarmd.socket; do
    [[ -e $f || -L $f ]] && left+=("$f")
done
for kind in service socket; do
    for f in /etc/systemd/system/prewarmd.$kind /var/lib/systemd/deb-systemd-helper-enabled/prewarmd.$kind.dsh-also \
        /var/lib/systemd/deb-systemd-helper-masked/prewarmd.$kind; do
        [[ -e $f || -L $f ]] && left+=("$f")
    done
done
check_eq "${left[*]}" "" "what is left after the purge"
check_eq "$(getent group prewarmd || true)" "$group_before" "the group prewarmd after the purge (as before)"
check_eq "$(dpkg-query -W -f='${db:Status-Status}' prewarmd 2>/dev/null || echo not-installed)" \
    not-installed "the package's status after the purge"
