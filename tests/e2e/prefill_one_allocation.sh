# On a disk that allocates one new block at a time (cowsim allocations=1, as
# tapdisk's VHD driver holds its BAT lock across an allocation and answers writes
# to other new blocks EBUSY, retried inside tapdisk), a prefill at its default
# queue depth gets several new blocks asked for at once: they queue behind the
# allocation in flight (cowsim's allocation_waits), never two at once
# (allocations_in_flight_peak), none fails, and the job ends done with every block
# allocated and the disk's content as it was. Judged by cowsim's counters.
source "$(dirname "$0")/lib.sh"
require_devices

MiB=$((1024 * 1024))
sim_up --disk vhd=256MiB,allocations=1
dev=$(dev_of vhd)
put_data "$dev" $((37 * MiB)) $((3 * MiB))
before=$(sha "$dev")
allocated=$(stat_of vhd blocks_allocated)

"$prewarmd" prefill --strategy full --json "$dev" >"$TEST_DIR/out.json" 2>"$TEST_DIR/err" ||
    fail "exit $?: $(cat "$TEST_DIR/err")"
check_eq "$(jq -r .state "$TEST_DIR/out.json")" warm "state"
grep -q "queue depth 8," "$TEST_DIR/err" || fail "not the default queue depth: $(cat "$TEST_DIR/err")"
check_eq "$(sha "$dev")" "$before" "content unchanged"
check_eq "$(stat_of vhd blocks_allocated)" "$(stat_of vhd blocks_total)" "every block allocated"
check_eq "$(stat_of vhd allocations_in_flight_peak)" 1 "allocations in flight at once, at most"
waits=$(stat_of vhd allocation_waits)
check_ge "$waits" 1 "writes that waited for another block's allocation"
pass "the job's $(($(stat_of vhd first_writes))) allocations after the $allocated before it: $waits writes waited"
