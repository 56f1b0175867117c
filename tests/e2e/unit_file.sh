# The systemd units: `systemd-analyze verify` finds nothing wrong, `security
# --offline` rates the service's exposure 2.5 or lower, the hardening leaves the
# daemon what it reads and calls: every process's /proc/PID/fd, /proc/swaps and
# /proc/diskstats, io_uring, netlink for udev, the Xen disks; and the socket unit
# holds the port [api] listen names by default.
source "$(dirname "$0")/lib.sh"
command -v systemd-analyze >/dev/null || cannot_run "no systemd-analyze (package systemd)"

unit=$TEST_DIR/prewarmd.service
# As installed, but with the program of this build (verify checks it exists).
sed "s|^ExecStart=/usr/sbin/prewarmd|ExecStart=$PREWARMD_BIN/prewarmd|" \
    "$PREWARMD_SRC/systemd/prewarmd.service" >"$unit"
grep -q "^ExecStart=$PREWARMD_BIN/prewarmd run$" "$unit" || fail "no ExecStart to rewrite"

cp "$PREWARMD_SRC/systemd/prewarmd.socket" "$TEST_DIR/" # named by the service: verified with it
run_status systemd-analyze verify --man=no "$unit" "$TEST_DIR/prewarmd.socket" >"$TEST_DIR/verify" 2>&1
check_eq "$status" 0 "systemd-analyze verify: exit status"
check_eq "$(grep -v "^$" "$TEST_DIR/verify" | head -5)" "" "what systemd-analyze verify says"

systemd-analyze security --offline=true --no-pager "$unit" >"$TEST_DIR/security" 2>&1 ||
    fail "systemd-analyze security: $(cat "$TEST_DIR/security")"
exposure=$(sed -n 's/.*Overall exposure level for prewarmd.service: \([0-9.]*\).*/\1/p' "$TEST_DIR/security")
[[ -n $exposure ]] || fail "no exposure level in: $(tail -3 "$TEST_DIR/security")"
check_ge 2.5 "$exposure" "exposure (systemd-analyze security), at most"

setting() { sed -n "s/^$1=//p" "$unit"; }
for absent in ProcSubset=pid ProtectProc=invisible PrivateDevices=yes PrivateUsers=yes; do
    if grep -qx "$absent" "$unit"; then fail "$absent hides what the daemon needs"; fi
done
pass "nothing hides /proc/PID/fd, /proc/swaps, /proc/diskstats or the disks"
check_eq "$(setting Type)" notify "Type"
check_eq "$(setting DevicePolicy)" closed "DevicePolicy"
setting DeviceAllow | grep -qx "block-xvd rw" || fail "no DeviceAllow=block-xvd rw"
setting DeviceAllow | grep -qx "block-blkext rw" || fail "no DeviceAllow=block-blkext rw"
pass "Xen disks (xvd, blkext) allowed"
setting RestrictAddressFamilies | grep -qw AF_NETLINK || fail "udev needs AF_NETLINK"
setting SystemCallFilter | grep -qx "@system-service" || fail "no @system-service allow list"
if setting SystemCallFilter | grep -q "~.*@aio"; then fail "io_uring (@aio) filtered out"; fi
pass "netlink and io_uring kept"
setting CapabilityBoundingSet | grep -qw CAP_SYS_PTRACE ||
    fail "without CAP_SYS_PTRACE the daemon cannot see who has a disk open"
pass "exposure $exposure, with the daemon's needs kept"

# The socket unit holds the port the daemon listens on by default (it serves only
# the handed sockets [api] listen names).
listen=$(sed -n 's/^ListenStream=//p' "$TEST_DIR/prewarmd.socket")
grep -qxF "#listen = [\"$listen\"]" "$PREWARMD_SRC/config.example.toml" ||
    fail "prewarmd.socket holds $listen, not the default of [api] listen: $(grep -F 'listen =' "$PREWARMD_SRC/config.example.toml")"
grep -qx "Wants=prewarmd.socket" "$unit" && grep -qx "After=prewarmd.socket" "$unit" ||
    fail "the service does not start after its socket"
pass "prewarmd.socket holds $listen, [api] listen's default, before the service starts"
