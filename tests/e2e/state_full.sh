# A cancel while the state directory is full (a 2 MiB tmpfs, filled up): the
# directory's spare makes room for the record, so it says cancelled; with no spare
# and no room, the cancel answers 507 (not recorded) rather than quietly leave a
# record that a restart would resume, and the record is saved within seconds of
# room being made. A running job's cancel is recorded before the answer too, so
# it answers the same. A restart then takes up none of the jobs.
source "$(dirname "$0")/lib.sh"
require_devices
require_udevd

sim_up --disk one=256MiB --disk two=256MiB --disk three=256MiB
mkdir -p "$TEST_DIR/state"
mount -t tmpfs -o size=2m,mode=0700 prewarmd-e2e-state "$TEST_DIR/state"
on_cleanup "umount $TEST_DIR/state"
config='[discovery]
match = '"$(sim_match)"'
attach_grace = "1s"
[prefill]
total_rate = "4MiB/s"
max_parallel = 1
checkpoint_interval = "1s"'

id_of() { curl -s "$API/v1/disks" | jq -r --arg p "$(sim_id "$1")" '.disks[] | select(.id | startswith($p)) | .id'; }
state_of() { curl -s "$API/v1/disks/$(id_of "$1")" | jq -r .state; }
cancel() { curl -s -o "$TEST_DIR/answer" -w '%{http_code}' -X POST -H "Authorization: Bearer $TOKEN" "$API/v1/disks/$(id_of "$1")/cancel"; }

start_daemon "$config"
wait_for_api
wait_for_log "queued -> running"
# One runs (max_parallel 1); the two queued are cancelled below.
queued=()
for name in one two three; do
    [[ $(state_of $name) == queued ]] && queued+=("$name")
done
check_eq "${#queued[@]}" 2 "disks queued behind the running one"
first=${queued[0]} second=${queued[1]}
check_eq "$(stat -c %s "$TEST_DIR/state/spare")" $((64 << 10)) "the state directory's spare"
TOKEN=$(api_token)

# Fills it up again: the running job's checkpoints give back a page now and then.
fill() {
    local i=0
    while head -c 4096 /dev/zero >"$TEST_DIR/state/filler.$i" 2>/dev/null; do i=$((i + 1)); done
    rm -f "$TEST_DIR/state/filler.$i" # the empty one the failed write left
}
fill
pass "the state directory is full ($(df --output=avail -B1 "$TEST_DIR/state" | tail -1 | tr -d ' ') bytes available)"

fill
check_eq "$(cancel "$first")" 200 "a cancel on the full directory"
check_eq "$(record_of "$first" state)" cancelled "its record, written in the spare's room"
# The record replaced one as big, which gave the room back: the spare is made again.
check_eq "$(stat -c %s "$TEST_DIR/state/spare")" $((64 << 10)) "the spare after it"

# As for a daemon that found no room for its spare: none.
rm "$TEST_DIR/state/spare"
fill
check_eq "$(cancel "$second")" 507 "a cancel with no spare and no room"
check_eq "$(jq -r .type "$TEST_DIR/answer")" urn:prewarmd:problem:not-recorded "the answer's type"
pass "the answer: $(jq -r .detail "$TEST_DIR/answer")"
wait_for_log "$(disk_pattern "$second"): cannot save its record"
[[ $(record_of "$second" state) != cancelled ]] || fail "a record was saved with no room"

rm -f "$TEST_DIR/state/filler".*
wait_for_log "$(disk_pattern "$second"): its record is saved now" 15
check_eq "$(record_of "$second" state)" cancelled "its record, once there was room"

for name in one two three; do
    [[ $name == "$first" || $name == "$second" ]] || running=$name
done
check_eq "$(state_of "$running")" running "the third disk's job"
rm -f "$TEST_DIR/state/spare" # made again once there was room
fill
check_eq "$(cancel "$running")" 507 "a running job's cancel with no spare and no room"
check_eq "$(jq -r .type "$TEST_DIR/answer")" urn:prewarmd:problem:not-recorded "the answer's type"
rm -f "$TEST_DIR/state/filler".*
wait_for_log "$(disk_pattern "$running"): its record is saved now" 15
check_eq "$(record_of "$running" state)" cancelled "the running job's record, once there was room"

stop_daemon
: >"$DAEMON_LOG"
start_daemon "$config"
wait_for_api
check_eq "$(stat -c %s "$TEST_DIR/state/spare")" $((64 << 10)) "the spare, made again at the start"
for name in "$first" "$second" "$running"; do
    wait_for_log "$(disk_pattern "$name"): attached; cancelled before"
    check_eq "$(state_of "$name")" cancelled "$name after the restart"
    if grep -Eq "$(disk_pattern "$name"): .*(resuming|queued)" "$DAEMON_LOG"; then
        fail "$name: taken up again: $(grep -Em1 "$(disk_pattern "$name")" "$DAEMON_LOG")"
    fi
done
pass "no cancelled disk taken up again"
