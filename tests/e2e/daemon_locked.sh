# The event loop never waits for a disk's lock: while another program holds a
# blank disk's block device lock (flock -x, as systemd-repart does while it writes
# it), the daemon starts, answers every API request (never 503), refuses a probe
# of that disk at once, and lets the disk wait, neither skipped nor written. Once
# the holder is gone and the disk quiet, it is judged again and warmed; a probe
# then works (nothing was left marked as probed).
source "$(dirname "$0")/lib.sh"
require_devices
require_udevd
command -v flock >/dev/null || cannot_run "no flock (util-linux)"

sim_up --disk x=256MiB
dev=$(dev_of x)
flock -x "$dev" sleep 8 &
holder=$!
on_cleanup "kill $holder 2>/dev/null || true"
for _ in $(seq 50); do
    flock -xn "$dev" true 2>/dev/null || break
    sleep 0.1
done
flock -xn "$dev" true 2>/dev/null && fail "the lock is not held"
pass "flock holds the disk's lock"

start_daemon '[discovery]
match = '"$(sim_match)"'
attach_grace = "1s"
[prefill]
total_rate = "unlimited"'
wait_for_api
wait_for_log "$(disk_pattern x): .*-> waiting: .*its block device lock is held by another program \(for 200 ms\): being written, maybe; judged once the disk is quiet for 1 s"
id=$(curl -s "$API/v1/disks" | jq -r --arg p "$(sim_id x)" '.disks[] | select(.id | startswith($p)) | .id')
[[ -n $id ]] || fail "no disk x in the API: $(curl -s "$API/v1/disks")"
TOKEN=$(api_token)
served=0
for _ in $(seq 10); do
    [[ $(exchange GET /v1/disks) == 200 ]] && served=$((served + 1))
done
check_eq "$served" 10 "GET /v1/disks answered 200 while the lock is held (of 10)"
check_eq "$(exchange POST "/v1/disks/$id/probe")" 409 "a probe of the locked disk refused ($(jq -r .detail "$TEST_DIR/body"))"
check_eq "$(curl -s "$API/v1/disks/$id" | jq -r .state)" waiting "the locked disk's state"
check_eq "$(stat_of x blocks_allocated)" 0 "blocks written while the lock is held"

wait "$holder" || true
wait_for_log "$(disk_pattern x): running -> warm" 60
check_eq "$(stat_of x blocks_allocated)" "$(stat_of x blocks_total)" "every block allocated once the lock was let go"
check_eq "$(exchange POST "/v1/disks/$id/probe")" 200 "a probe once done"
