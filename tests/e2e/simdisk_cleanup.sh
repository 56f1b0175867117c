# A failing test still removes its loop devices and mount, and `simdisk down`
# cleans up after a cowsim that died.
source "$(dirname "$0")/lib.sh"
require_devices

# A test that fails half-way, using the same library.
cat >"$TEST_DIR/failing.sh" <<'INNER'
source "$PREWARMD_SRC/tests/e2e/lib.sh"
sim_up --disk a=16MiB --disk b=16MiB
cp "$TEST_DIR/devices" "$OUTER/devices"
echo "$SIM" >"$OUTER/inner-sim"
fail "failing on purpose"
INNER
if OUTER=$TEST_DIR bash "$TEST_DIR/failing.sh" >"$TEST_DIR/failing.log" 2>&1; then
    fail "the failing test passed"
fi
grep -q "failing on purpose" "$TEST_DIR/failing.log" || fail "the failing test failed otherwise"
inner_sim=$(cat "$TEST_DIR/inner-sim")
while read -r name dev; do
    backing=/sys/block/$(basename "$dev")/loop/backing_file
    if [[ -r $backing && $(cat "$backing") == "$inner_sim"/* ]]; then
        fail "$dev ($name) is still attached after the test failed"
    fi
done <"$TEST_DIR/devices"
pass "the failed test's loop devices are gone"
grep -q " $inner_sim/mnt " /proc/self/mounts && fail "the failed test's mount is still there"
pass "the failed test's mount is gone"

sim_up --disk c=16MiB
dev=$(dev_of c)
pkill -KILL -f "cowsim --store-dir $SIM/store" || fail "no cowsim to kill"
sleep 0.2
"$simdisk" down --state "$SIM"
[[ ! -r /sys/block/$(basename "$dev")/loop/backing_file ]] ||
    [[ $(cat "/sys/block/$(basename "$dev")/loop/backing_file") != "$SIM"/* ]] ||
    fail "$dev is still attached after down"
grep -q " $SIM/mnt " /proc/self/mounts && fail "the mount of a dead cowsim is still there"
pass "down cleans up after a cowsim killed with SIGKILL"
