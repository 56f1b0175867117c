# A start's deadline, through prewarmctl and the API, on a simulated disk: one
# the whole disk cannot meet at the total rate is refused (exit 6, the problem
# deadline-too-near, the rate it would need), and nothing starts; one it can meet
# is shown in the disk's `deadline`, and the job is given the rate the bytes left
# need in the time left, not the total rate. Judged by the daemon's states and the
# rate it set, not by timings.
source "$(dirname "$0")/lib.sh"
require_devices
ctl=$PREWARMD_BIN/prewarmctl
MiB=$((1024 * 1024))

sim_up --disk a=256MiB
a=$(basename "$(dev_of a)")
api_config
start_daemon "[discovery]
match = $(sim_match)
[prefill]
auto_prefill = \"never\"
total_rate = \"100MiB/s\"
$API_CONFIG"
wait_for_api
pc() { "$ctl" --socket "$API_SOCKET" "$@"; }

# 256 MiB within 1 s needs 256 MiB/s: over the total rate.
run_status pc start "$a" --by 1s >"$TEST_DIR/out" 2>"$TEST_DIR/err"
check_eq "$status" 6 "a deadline too near: exit code"
grep -q "needs 256" "$TEST_DIR/err" || fail "no rate it would need: $(cat "$TEST_DIR/err")"
pass "refused: $(cat "$TEST_DIR/err")"
check_eq "$(pc --json show "$a" | jq -r .state)" discovered "the disk after the refusal"
run_status pc start "$a" --by 1800 >"$TEST_DIR/out" 2>"$TEST_DIR/err"
check_eq "$status" 2 "a deadline without a unit: exit code"

# Within 10 min: about 437 KiB/s, far under the total rate.
run_status pc start "$a" --by 10min >"$TEST_DIR/out" 2>"$TEST_DIR/err"
check_eq "$status" 0 "a deadline it can meet: exit code ($(cat "$TEST_DIR/err"))"
pc --json show "$a" >"$TEST_DIR/disk.json"
check_eq "$(jq -r .state "$TEST_DIR/disk.json")" running "its state"
left=$(jq .deadline.seconds_left "$TEST_DIR/disk.json")
check_ge "$left" 590 "seconds left to its deadline"
check_le "$left" 601 "seconds left to its deadline (its end rounded up to a second)"
check_eq "$(jq .deadline.on_track "$TEST_DIR/disk.json")" true "on track"
need=$((256 * MiB / 600))
# The rate set follows the deadline: within a few seconds' drift of the need.
for _ in $(seq 1 50); do
    limit=$(pc --json show "$a" | jq .progress.rate_limit_bytes_per_s)
    [[ $limit -gt 0 ]] && break
    sleep 0.1
done
check_ge "$limit" $((need * 95 / 100)) "the job's rate limit (the need, 256 MiB over 600 s)"
check_le "$limit" $((need * 110 / 100)) "the job's rate limit (not the total rate)"
check_le "$(jq .deadline.needed_bytes_per_s "$TEST_DIR/disk.json")" $((need * 110 / 100)) \
    "the need the API shows"
expect_cancel() { run_status pc cancel "$a" >/dev/null 2>&1; check_eq "$status" 0 "cancel"; }
expect_cancel

# A deadline as a time (RFC 3339): shown as asked; one passed is refused as bad usage.
at=$(date -u -d '+20 min' +%Y-%m-%dT%H:%M:%SZ)
run_status pc start "$a" --deadline "$at" >"$TEST_DIR/out" 2>"$TEST_DIR/err"
check_eq "$status" 0 "a deadline as a time: exit code ($(cat "$TEST_DIR/err"))"
pc --json show "$a" >"$TEST_DIR/disk.json"
check_eq "$(jq -r .deadline.at "$TEST_DIR/disk.json")" "$at" "its deadline, as asked"
check_ge "$(jq .deadline.seconds_left "$TEST_DIR/disk.json")" 1190 "seconds left to it"
expect_cancel
run_status pc start "$a" --deadline "$(date -u -d '-1 min' +%Y-%m-%dT%H:%M:%SZ)" \
    >"$TEST_DIR/out" 2>"$TEST_DIR/err"
check_eq "$status" 2 "a deadline passed: exit code"
grep -q "deadline is from 1 s to" "$TEST_DIR/err" || fail "a passed deadline: $(cat "$TEST_DIR/err")"

# prefill --by, the daemon stopped: refused where --rate cannot make it, else
# paced from its first chunk at what the disk needs, aimed 5% early.
stop_daemon
dev=$(dev_of a)
run_status "$prewarmd" prefill --by 1s --rate 10MiB/s "$dev" >"$TEST_DIR/out" 2>"$TEST_DIR/err"
check_eq "$status" 6 "prefill: a deadline too near: exit code"
grep -q "needs 256.0 MiB/s, over --rate of 10.0 MiB/s" "$TEST_DIR/err" ||
    fail "prefill: no rate it would need: $(cat "$TEST_DIR/err")"
run_status "$prewarmd" prefill --by 10 "$dev" >"$TEST_DIR/out" 2>"$TEST_DIR/err"
check_eq "$status" 2 "prefill: a deadline without a unit: exit code"
run_status "$prewarmd" prefill --json --strategy full --by 8s "$dev" >"$TEST_DIR/by.json" 2>"$TEST_DIR/err"
[[ $status == 0 || $status == 8 ]] || fail "prefill --by 8s: exit $status: $(cat "$TEST_DIR/err")"
first=$(grep -o "at most [0-9.]* MiB/s" "$TEST_DIR/err" | head -1 | tr -dc '0-9.')
[[ -n $first ]] || fail "prefill --by: not paced from its start: $(cat "$TEST_DIR/err")"
# 256 MiB over 8 to 9 s (the end rounded up), less a second's headroom: 32 to 36.6 MiB/s.
check_ge "${first%.*}" 31 "prefill --by 8s: its first rate, MiB/s"
check_le "${first%.*}" 37 "prefill --by 8s: its first rate, MiB/s (not flat out)"
jq -e '.deadline.at and (.deadline.met | type == "boolean")' "$TEST_DIR/by.json" >/dev/null ||
    fail "prefill --by: no deadline in the summary: $(cat "$TEST_DIR/by.json")"
pass "prefill --by 8s: $(jq -c .deadline "$TEST_DIR/by.json")"
