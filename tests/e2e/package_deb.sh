# The .deb: cpack builds it, lintian finds no error in it, dpkg installs it (the
# files, the conffile, the unit enabled, `prewarmd --version`), and removing then
# purging it leaves nothing behind.
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

cpack --config "$build/CPackConfig.cmake" -G DEB -B "$TEST_DIR/pkg" >"$TEST_DIR/cpack" 2>&1 ||
    fail "cpack: $(tail -20 "$TEST_DIR/cpack")"
deb=$(ls "$TEST_DIR"/pkg/prewarmd_*.deb)
pass "built $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"
depends=$(dpkg-deb -f "$deb" Depends)
[[ $depends == *libsdbus-c++1* && $depends == *liburing2* && $depends == *init-system-helpers* ]] ||
    fail "Depends (from shlibdeps): $depends"
pass "Depends: $depends"

# lintian: an error or a warning fails; its info tags are printed.
run_status lintian --tag-display-limit 0 --display-info --fail-on error,warning "$deb" \
    >"$TEST_DIR/lintian" 2>&1
cat "$TEST_DIR/lintian"
check_eq "$status" 0 "lintian's exit status (errors or warnings)"

on_cleanup "dpkg --purge prewarmd >/dev/null 2>&1 || true"
dpkg --install "$deb" >"$TEST_DIR/dpkg" 2>&1 || fail "dpkg --install: $(cat "$TEST_DIR/dpkg")"
files=(/usr/sbin/prewarmd /usr/bin/prewarmctl /lib/systemd/system/prewarmd.service
    /etc/prewarmd/prewarmd.toml /usr/share/dbus-1/system.d/org.prewarmd.Prewarmd1.conf
    /usr/share/man/man8/prewarmd.8.gz /usr/share/man/man1/prewarmctl.1.gz
    /usr/share/man/man5/prewarmd.toml.5.gz /usr/share/bash-completion/completions/prewarmctl
    /usr/share/doc/prewarmd/copyright)
for f in "${files[@]}"; do [[ -e $f ]] || fail "not installed: $f"; done
pass "installed: ${#files[@]} files checked"
dpkg-query -W -f='${Conffiles}\n' prewarmd | grep -q "^ /etc/prewarmd/prewarmd.toml " ||
    fail "the config is not a conffile: $(dpkg-query -W -f='${Conffiles}' prewarmd)"
pass "/etc/prewarmd/prewarmd.toml is a conffile"
[[ -L /etc/systemd/system/multi-user.target.wants/prewarmd.service ]] || fail "the unit is not enabled"
pass "prewarmd.service enabled"
check_eq "$(/usr/sbin/prewarmd --version)" "prewarmd $(dpkg-deb -f "$deb" Version)" "prewarmd --version"
/usr/sbin/prewarmd config --check /etc/prewarmd/prewarmd.toml >/dev/null ||
    fail "the installed config does not check"
pass "the installed config checks"
man -l /usr/share/man/man5/prewarmd.toml.5.gz 2>/dev/null | grep -q "attach_grace" ||
    fail "prewarmd.toml(5) does not list attach_grace"
pass "prewarmd.toml(5) lists the settings"

dpkg --remove prewarmd >"$TEST_DIR/dpkg" 2>&1 || fail "dpkg --remove: $(cat "$TEST_DIR/dpkg")"
[[ ! -e /usr/sbin/prewarmd && -e /etc/prewarmd/prewarmd.toml ]] ||
    fail "after remove: the program should be gone and the conffile kept"
pass "removed: the program gone, the conffile kept"
mkdir -p /var/lib/prewarmd/jobs # as the service would have made it
dpkg --purge prewarmd >"$TEST_DIR/dpkg" 2>&1 || fail "dpkg --purge: $(cat "$TEST_DIR/dpkg")"
left=()
for f in "${files[@]}" /etc/prewarmd /var/lib/prewarmd /etc/systemd/system/multi-user.target.wants/prewarmd.service \
    /etc/systemd/system/prewarmd.service /var/lib/systemd/deb-systemd-helper-enabled/prewarmd.service.dsh-also \
    /var/lib/systemd/deb-systemd-helper-masked/prewarmd.service; do
    [[ -e $f || -L $f ]] && left+=("$f")
done
check_eq "${left[*]}" "" "what is left after the purge"
check_eq "$(dpkg-query -W -f='${db:Status-Status}' prewarmd 2>/dev/null || echo not-installed)" \
    not-installed "the package's status after the purge"
