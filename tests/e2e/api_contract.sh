# The HTTP API against its contract: a disk driven through start, pause, resume,
# release, cancel and its events, the settings, the metrics and the errors, every
# response checked against api/openapi.yaml by a real JSON Schema validator
# (Debian's python3-jsonschema), and every served route found in the spec.
source "$(dirname "$0")/lib.sh"
require_devices
[[ -x /usr/bin/python3 ]] && /usr/bin/python3 -c 'import jsonschema, yaml' 2>/dev/null ||
    cannot_run "no python3-jsonschema and python3-yaml"

sim_up --disk a=512MiB
api_config
start_daemon '[discovery]
match = '"$(sim_match)"'
[prefill]
auto_prefill = "never"
total_rate = "32MiB/s"
'"$API_CONFIG"
wait_for_api
TOKEN=$(api_token)

id=$(curl -s "$API/v1/disks" | jq -r --arg n "$(basename "$(dev_of a)")" '.disks[] | select(.name == $n) | .id')
[[ $id == loop-* ]] || fail "no loop disk listed: $(curl -s "$API/v1/disks")"
check_eq "$(curl -s "$API/v1/disks/$id" | jq -r .state)" discovered "state before a request"

check_eq "$(exchange GET /healthz)" 200 "GET /healthz"
check_eq "$(exchange GET /readyz)" 200 "GET /readyz"
check_eq "$(exchange GET /v1/disks)" 200 "GET /v1/disks"
check_eq "$(exchange GET "/v1/disks/$id")" 200 "GET /v1/disks/ID"
check_eq "$(exchange GET /v1/settings)" 200 "GET /v1/settings"

# Events while the disk is driven around.
curl -sN --max-time 6 -D "$TEST_DIR/events.headers" "$API/v1/events" >"$TEST_DIR/events" &
events=$!
wait_for_line "$TEST_DIR/events.headers" "^HTTP/1.1 200" 5
check_eq "$(TOKEN='' exchange POST "/v1/disks/$id/start")" 401 "start without the token"
check_eq "$(TOKEN=wrong-token-wrong-token exchange PATCH /v1/settings -H 'Content-Type: application/json' -d '{}')" 401 \
    "PATCH with a wrong token"
check_eq "$(exchange POST "/v1/disks/$id/start" -H 'Content-Type: application/json' -d '{"queue_depth": 4}')" 202 "start"
check_eq "$(exchange POST "/v1/disks/$id/start")" 202 "start again: the same job"
wait_for_log "$(disk_pattern a): queued -> running"
sleep 1.5
check_eq "$(exchange POST "/v1/disks/$id/pause")" 200 "pause"
check_eq "$(curl -s "$API/v1/disks/$id" | jq -r .state)" paused "state after pause"
check_eq "$(exchange POST "/v1/disks/$id/pause")" 200 "pause again"
check_eq "$(exchange POST "/v1/disks/$id/resume")" 200 "resume"
sleep 1.2
check_eq "$(exchange POST "/v1/disks/$id/release")" 200 "release"
wait_for_log "$(disk_pattern a): running -> released"
check_eq "$(exchange POST "/v1/disks/$id/start")" 202 "start after release: resumes"
wait_for_log "resuming from .*_mnt_a-"
check_eq "$(exchange POST "/v1/disks/$id/cancel" -d '{}' -H 'Content-Type: application/json')" 200 "cancel"
wait_for_log "$(disk_pattern a): running -> cancelled"
check_eq "$(exchange POST "/v1/disks/$id/resume")" 409 "resume a cancelled job"
wait "$events" || true
jq -cn --arg b "$(cat "$TEST_DIR/events")" \
    '{method: "GET", path: "/v1/events", status: 200, content_type: "text/event-stream", body: $b}' \
    >>"$TEST_DIR/exchanges.jsonl"
for event in state_changed progress; do
    grep -q "^event: $event" "$TEST_DIR/events" || fail "no $event event in the stream"
done
pass "the event stream carried state changes and progress"

check_eq "$(exchange PATCH /v1/settings -H 'Content-Type: application/json' -d '{"total_rate_bytes_per_s": 0, "max_parallel": 2}')" 200 "PATCH settings"
check_eq "$(curl -s "$API/v1/settings" | jq .max_parallel)" 2 "max_parallel after PATCH"
check_eq "$(exchange GET /metrics)" 200 "GET /metrics"
grep -q "^prewarmd_disk_state{disk=\"$id\",name=\"loop[0-9]*\",state=\"cancelled\"} 1" "$TEST_DIR/body" ||
    fail "metrics: no cancelled state for $id"
grep -q '^prewarmd_disk_write_latency_seconds_bucket{.*le="+Inf"}' "$TEST_DIR/body" || fail "metrics: no histogram"
pass "metrics: the state and the latency histogram"

# Errors: a clear 4xx each, and no change.
check_eq "$(exchange GET /v1/disks/no-such-disk)" 404 "unknown disk"
check_eq "$(exchange GET '/v1/disks/bad%21id')" 400 "odd characters in an id"
check_eq "$(exchange POST /v1/disks/no-such-disk/start)" 404 "start an unknown disk"
check_eq "$(exchange DELETE /v1/disks)" 405 "wrong method"
check_eq "$(exchange GET /v1/nothing)" 404 "no such route"
check_eq "$(exchange PATCH /v1/settings -H 'Content-Type: application/json' -d '{"max_parallel": ')" 400 "malformed JSON"
check_eq "$(exchange PATCH /v1/settings -H 'Content-Type: application/json' -d '{"max_parallel": "two"}')" 400 "wrong type"
check_eq "$(exchange PATCH /v1/settings -H 'Content-Type: application/json' -d '{"max_parallel": 0}')" 400 "out of range"
check_eq "$(exchange PATCH /v1/settings -H 'Content-Type: application/json' -d '{"colour": "red"}')" 400 "unknown field"
check_eq "$(exchange PATCH /v1/settings -H 'Content-Type: text/plain' -d 'max_parallel=3')" 415 "not JSON"
check_eq "$(exchange PATCH /v1/settings -H 'Content-Type: application/json' -d '{"max_parallel": 64, "total_rate_bytes_per_s": 1}')" 422 \
    "max_parallel 64: the jobs' buffers over the budget"
check_eq "$(jq -r .type "$TEST_DIR/body")" urn:prewarmd:problem:over-budget "its problem type"
check_eq "$(exchange POST "/v1/disks/$id/pause" -H 'Content-Type: application/json' -d '{"now": true}')" 400 "a field a command does not take"
head -c 70000 /dev/zero | tr '\0' ' ' >"$TEST_DIR/big"
check_eq "$(exchange PATCH /v1/settings -H 'Content-Type: application/json' --data-binary @"$TEST_DIR/big")" 413 "a body over 64 KiB"
check_eq "$(curl -s "$API/v1/settings" | jq -c .)" '{"auto_prefill":"never","max_parallel":2,"total_rate_bytes_per_s":0}' \
    "settings after the refused requests"

"$PREWARMD_BIN/api_routes" >"$TEST_DIR/routes"
/usr/bin/python3 "$PREWARMD_SRC/tests/api/check_contract.py" "$PREWARMD_SRC/api/openapi.yaml" \
    "$TEST_DIR/routes" "$TEST_DIR/exchanges.jsonl" || fail "the API does not keep to its contract"
pass "every exchange keeps to api/openapi.yaml"
