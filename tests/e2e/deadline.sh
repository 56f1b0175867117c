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
check_le "$left" 600 "seconds left to its deadline"
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
