# With io_uring disabled by the kernel (kernel.io_uring_disabled, since 6.6), a
# prefill says so, falls back to pread/pwrite by itself, and gets the same result.
# Runs alone: it changes a machine-wide setting, and puts it back.
source "$(dirname "$0")/lib.sh"
require_devices
knob=/proc/sys/kernel/io_uring_disabled
[[ -w $knob ]] || cannot_run "no writable $knob (kernel older than 6.6)"

MiB=$((1024 * 1024))
sim_up --disk xvdb=32MiB
dev=$(dev_of xvdb)
put_data "$dev" $((9 * MiB)) 8192
before=$(sha "$dev")

saved=$(cat "$knob")
restore_knob() { echo "$saved" >"$knob"; }
on_cleanup restore_knob
echo 2 >"$knob"
"$prewarmd" prefill --strategy full --json "$dev" >"$TEST_DIR/out.json" 2>"$TEST_DIR/err" || fail "exit $?"
restore_knob
grep -q "io_uring setup: Operation not permitted: using pread/pwrite" "$TEST_DIR/err" ||
    fail "the fallback was not reported: $(cat "$TEST_DIR/err")"
pass "the fallback to pread/pwrite is reported"
check_eq "$(jq -r .io_engine "$TEST_DIR/out.json")" pread/pwrite "engine used"
check_eq "$(jq -r .state "$TEST_DIR/out.json")" warm "state"
check_eq "$(sha "$dev")" "$before" "content unchanged"
check_eq "$(stat_of xvdb blocks_allocated)" "$(stat_of xvdb blocks_total)" "every block allocated"

echo 2 >"$knob"
run_status "$prewarmd" prefill --strategy full --io-engine uring "$dev" >/dev/null 2>"$TEST_DIR/err"
restore_knob
check_eq "$status" 1 "exit status when io_uring is asked for and disabled"
