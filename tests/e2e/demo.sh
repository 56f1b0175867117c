# The main job, ./scripts/demo, as a user runs it: it finishes, both simulated
# disks end fully allocated by prewarmd, it reports how much faster the warm
# writes were (the figure is the demo's to show, not this test's to judge), and
# nothing it started is left (simulator, loop devices, daemon, state).
source "$(dirname "$0")/lib.sh"
require_devices

run_status "$PREWARMD_SRC/scripts/demo" >"$TEST_DIR/out" 2>&1
cat "$TEST_DIR/out"
check_eq "$status" 0 "the demo's exit status"
check_eq "$(grep -c "blocks allocated" "$TEST_DIR/out")" 2 "disks reported"
check_eq "$(grep -c "1024 of 1024 blocks allocated" "$TEST_DIR/out")" 2 "disks fully allocated"
grep -q "^The VM's first writes are [0-9]*x faster" "$TEST_DIR/out" || fail "no speed-up reported"
pass "$(grep "^The VM's first writes are" "$TEST_DIR/out")"
state=$(sed -n 's/.*(log: \(\/var\/tmp\/prewarmd-demo\.[A-Za-z0-9]*\)\/prewarmd.log).*/\1/p' "$TEST_DIR/out")
[[ -n $state ]] || fail "no state directory named in the output"
[[ ! -e $state ]] || fail "$state is left"
if losetup -a | grep -qF "$state/"; then fail "loop devices left: $(losetup -a | grep -F "$state/")"; fi
if pgrep -f -- "--state-dir $state/" >/dev/null; then fail "a daemon is left"; fi
if pgrep -f -- "$state/sim" >/dev/null; then fail "the simulator is left"; fi
pass "nothing left of $state"
