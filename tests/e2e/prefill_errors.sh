# What a prefill does when the disk misbehaves or is in use, with the documented
# exit codes: an EIO that lasts fails the job naming the offset; a vanished disk is
# detached; a full backend pauses (and the checkpoint lets a later run finish);
# another writer interrupts; a disk in use or read-only is refused; bad input is
# one line and exit 2.
source "$(dirname "$0")/lib.sh"
require_devices

MiB=$((1024 * 1024))
sim_up --disk eio=64MiB --disk gone=64MiB --disk full=64MiB --disk shared=256MiB --disk busy=64MiB

dev=$(dev_of eio)
control "fail write eio range=$((40 * MiB))+4KiB"
run_status "$prewarmd" prefill --strategy full "$dev" 2>"$TEST_DIR/err" >"$TEST_DIR/out"
check_eq "$status" 1 "exit status after a lasting EIO"
grep -q "write at offset $((40 * MiB)) failed: Input/output error (after 3 retries)" "$TEST_DIR/out" ||
    fail "the failure does not name the offset: $(cat "$TEST_DIR/out")"
pass "the failure names offset $((40 * MiB)) and the error"
grep -q "retry 1 of 3" "$TEST_DIR/err" || fail "no retries were logged"
pass "the retries were logged"

dev=$(dev_of gone)
control "vanish gone"
run_status "$prewarmd" prefill --strategy full "$dev" >"$TEST_DIR/out" 2>&1
check_eq "$status" 4 "exit status when the disk vanishes"
grep -q "detached" "$TEST_DIR/out" || fail "not reported as detached: $(cat "$TEST_DIR/out")"
control "appear gone"

dev=$(dev_of full)
used=$(jq .backend.used_bytes "$SIM/mnt/.stats")
# Room for the probe's places (a few blocks a stride) and some of the job's writes.
control "capacity $((used + 40 * MiB))"
run_status "$prewarmd" prefill --strategy full --checkpoint "$TEST_DIR/full.ckpt" "$dev" >"$TEST_DIR/out" 2>&1
check_eq "$status" 5 "exit status when the backend is full"
grep -q "the backend is full" "$TEST_DIR/out" || fail "ENOSPC not explained: $(cat "$TEST_DIR/out")"
control "capacity unlimited"
# The resumed run is proven by the cold probe its first run kept in the checkpoint.
run_status "$prewarmd" prefill --strategy full --checkpoint "$TEST_DIR/full.ckpt" --json "$dev" >"$TEST_DIR/out.json"
check_eq "$status" 0 "the run after space was freed: exit status ($(jq -r .reason "$TEST_DIR/out.json"))"
check_eq "$(jq -r .state "$TEST_DIR/out.json")" warm "the run after space was freed: state"
# (The probe takes some of the 40 MiB free before the job: its places are blocks too.)
check_ge "$(jq .resumed_bytes "$TEST_DIR/out.json")" $((4 * MiB)) "bytes resumed after ENOSPC"
check_eq "$(stat_of full blocks_allocated)" "$(stat_of full blocks_total)" "every block allocated in the end"

# Until the prefill of simulated disk NAME has written (not a fixed sleep: a loaded
# machine may take a while to start it).
wait_for_writes() { # NAME
    local _
    for _ in $(seq 200); do
        (($(stat_of "$1" blocks_allocated) > 0)) && return 0
        sleep 0.1
    done
    fail "the prefill of $1 wrote nothing in 20 s"
}

dev=$(dev_of shared)
"$prewarmd" prefill --strategy full --rate 32MiB/s "$dev" >"$TEST_DIR/out" 2>&1 &
pid=$!
wait_for_writes shared
dd if=/dev/urandom of="$dev" bs=4k count=1 seek=60000 oflag=direct status=none
run_status wait "$pid"
check_eq "$status" 3 "exit status when another process writes"
# Seen by the write counter, or first by the watch of opens (dd's open comes
# before its write): either way the job stepped aside for it, naming it.
grep -Eq "another writer wrote 4.00 KiB|the disk was opened by dd \(pid [0-9]+\)" "$TEST_DIR/out" ||
    fail "$(cat "$TEST_DIR/out")"
pass "the foreign writer is named"

dev=$(dev_of busy)
"$prewarmd" prefill --strategy full --rate 8MiB/s "$dev" >/dev/null 2>&1 &
pid=$!
wait_for_writes busy
run_status "$prewarmd" prefill --strategy full "$dev" >/dev/null 2>"$TEST_DIR/err"
check_eq "$status" 6 "exit status for a disk another job holds"
grep -q "is in use" "$TEST_DIR/err" || fail "$(cat "$TEST_DIR/err")"
kill -INT "$pid"
run_status wait "$pid"
check_eq "$status" 130 "exit status after SIGINT"
sim_down

sim_up --read-only --disk ro=16MiB
run_status "$prewarmd" prefill --strategy full "$(dev_of ro)" >/dev/null 2>"$TEST_DIR/err"
check_eq "$status" 6 "exit status for a read-only disk"
grep -q "is read-only" "$TEST_DIR/err" || fail "$(cat "$TEST_DIR/err")"
# Read mode writes nothing, so nothing proves it warm: unproven, exit 8.
run_status "$prewarmd" prefill --strategy full --mode read "$(dev_of ro)" >/dev/null
check_eq "$status" 8 "read mode on a read-only disk: exit status"

expect_usage() { # WHAT ARGS...: exit 2 and one line on stderr
    local what=$1
    shift
    run_status "$prewarmd" prefill --strategy full "$@" >/dev/null 2>"$TEST_DIR/err"
    check_eq "$status" 2 "exit status for $what"
    check_eq "$(wc -l <"$TEST_DIR/err")" 1 "lines of error for $what"
}
expect_usage "an unknown unit" --rate 5XB/s "$(dev_of ro)"
expect_usage "a missing path" /dev/nonexistent-disk
expect_usage "an unknown mode" --mode shred "$(dev_of ro)"
expect_usage "a chunk not a multiple of the backend block" --mode read --chunk 3MiB "$(dev_of ro)"
expect_usage "an unknown option" --frobnicate "$(dev_of ro)"
expect_usage "no path"
cp "$TEST_DIR/full.ckpt" "$TEST_DIR/other.ckpt"
expect_usage "a checkpoint of another disk" --mode read --checkpoint "$TEST_DIR/other.ckpt" "$(dev_of ro)"
