# The daemon under siege by the user nobody (tests/api/raw_requests.py siege: 40
# connections begun and trickled, event streams, header lines without end, for as
# long as the test runs) while a job warms a disk: the job still steps aside for a
# foreign writer (dd), and what dd wrote reads back; the token holder's changes
# are answered 200 throughout; the daemon's peak RSS stays under 64 MiB.
source "$(dirname "$0")/lib.sh"
require_devices
[[ -x /usr/bin/python3 ]] || cannot_run "no /usr/bin/python3"

sim_up --disk x=1GiB
dev=$(dev_of x)
head -c 64M /dev/urandom >"$TEST_DIR/pattern"
api_config
start_daemon '[discovery]
match = '"$(sim_match)"'
attach_grace = "1s"
[prefill]
total_rate = "24MiB/s"
'"$API_CONFIG"'
max_connections = 8'
wait_for_api
wait_for_log "$(disk_pattern x): queued -> running"
TOKEN=$(api_token)

# Where nobody can see the stop file (the test's directory is root's alone).
siege_dir=$(mktemp -d /tmp/prewarmd-siege.XXXXXX)
chmod 755 "$siege_dir"
on_cleanup "rm -rf $siege_dir"
stop=$siege_dir/stop
/usr/bin/python3 "$PREWARMD_SRC/tests/api/raw_requests.py" siege "$API_PORT" 65534 "$stop" \
    >"$TEST_DIR/siege" 2>&1 &
siege=$!
on_cleanup "touch $stop; wait $siege 2>/dev/null || true"
sleep 6 # past the first request deadline: refusals under way

changes() { # N: the token holder's PATCHes, each must be 200
    local i code
    for i in $(seq "$1"); do
        code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -X PATCH \
            -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
            -d "{\"max_parallel\": $((1 + i % 2))}" "$API/v1/settings")
        [[ $code == 200 ]] || fail "the token holder's change $i under siege: $code"
        sleep 0.3
    done
    pass "the token holder's $1 changes under siege: 200 each"
}
changes 5

dd if="$TEST_DIR/pattern" of="$dev" bs=1M seek=512 oflag=direct status=none
wait_for_log "$(disk_pattern x): running -> waiting: stepped aside"
cmp -s "$TEST_DIR/pattern" <(dd if="$dev" bs=1M skip=512 count=64 iflag=direct status=none) ||
    fail "what dd wrote does not read back"
pass "what dd wrote reads back"
changes 5

kill -0 "$siege" || fail "the siege ended early: $(cat "$TEST_DIR/siege")"
touch "$stop"
wait "$siege" || fail "the siege failed: $(cat "$TEST_DIR/siege")"
answered=$(tail -1 "$TEST_DIR/siege")
pass "the siege, as the daemon answered it: $answered"
jq -e '(."503" // 0) + (."408" // 0) + (."431" // 0) > 0' <<<"$answered" >/dev/null ||
    fail "the siege met no refusal: $answered"
peak=$(awk '/^VmHWM/ {print $2}' "/proc/$DAEMON_PID/status")
check_le "$peak" $((64 << 10)) "the daemon's peak RSS under siege (KiB)"
