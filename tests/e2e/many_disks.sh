# 64 disks of 64 MiB at once (8 probe regions: at 32 MiB, 3 controlled pairs left
# 1 of 64 unproven in 2 runs, with the others held while each probes): each is
# found, warmed and ends warm (the backend agrees: every block allocated), 8 at a time; the API answers throughout; the daemon's peak RSS
# stays within the bound docs/daemon.md gives: 24 MiB, and per running job its
# buffers (queue_depth x chunk, 4 MiB here) and 2 MiB: 72 MiB for these 8 jobs.
# (Seen: 22 MiB at max_parallel 1, 41 at 4, 61 at 8.)
source "$(dirname "$0")/lib.sh"
require_devices
require_udevd

disks=()
for i in $(seq 64); do disks+=(--disk "d$i=64MiB"); done
sim_up "${disks[@]}"
check_eq "$(wc -l <"$TEST_DIR/devices")" 64 "simulated disks attached"

start_daemon '[discovery]
match = '"$(sim_match)"'
attach_grace = "1s"
[prefill]
max_parallel = 8
chunk = "2MiB"
queue_depth = 2
total_rate = "unlimited"'
wait_for_api

# Until every disk is warm (120 s at most), the API asked twice a second.
answers=0
deadline=$((SECONDS + 120))
while :; do
    body=$(curl -sf --max-time 5 "$API/v1/disks") || fail "GET /v1/disks failed after $answers answers"
    answers=$((answers + 1))
    warm=$(jq --arg p "$(sim_rule | sed 's/^id://; s/\*$//')" \
        '[.disks[] | select(.id | startswith($p)) | select(.state == "warm")] | length' <<<"$body")
    ((warm == 64)) && break
    ((SECONDS < deadline)) ||
        fail "$warm of 64 disks warm after 120 s: $(jq -c '[.disks[] | {state, reason}] | group_by(.state) | map({(.[0].state): {count: length, first: .[0].reason}}) | add' <<<"$body")"
    sleep 0.5
done
pass "64 disks warm; the API answered all $answers requests meanwhile"

for i in $(seq 64); do
    [[ $(stat_of "d$i" blocks_allocated) == $(stat_of "d$i" blocks_total) ]] ||
        fail "d$i: $(stat_of "d$i" blocks_allocated) of $(stat_of "d$i" blocks_total) blocks allocated"
done
pass "the backend agrees: every block of the 64 disks allocated"
peak=$(awk '/^VmHWM/ {print $2}' "/proc/$DAEMON_PID/status")
check_le "$peak" $(((24 + 8 * (4 + 2)) << 10)) "the daemon's peak RSS (KiB)"
