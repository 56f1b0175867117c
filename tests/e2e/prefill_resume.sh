# Killed with SIGKILL mid-run, a prefill resumes from its checkpoint and finishes:
# every block allocated in the end, and the checkpoint never claimed more than the
# disk had.
source "$(dirname "$0")/lib.sh"
require_devices

MiB=$((1024 * 1024))
sim_up --disk xvdb=256MiB
dev=$(dev_of xvdb)
ckpt=$TEST_DIR/xvdb.ckpt

"$prewarmd" prefill --strategy full --rate 32MiB/s --checkpoint "$ckpt" --checkpoint-interval 1s "$dev" \
    >/dev/null 2>&1 &
pid=$!
sleep 3
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
[[ -f $ckpt ]] || fail "no checkpoint after 3 s"
done_bytes=$(sed 1d "$ckpt" | jq '[.done[][1]] | add // 0')
check_ge "$done_bytes" $((16 * MiB)) "bytes recorded done before the kill"
[[ $done_bytes -lt $((256 * MiB)) ]] || fail "the job finished before it was killed"
# Every range recorded done is allocated on the disk: the checkpoint never ran ahead.
uncovered=$(jq -n --slurpfile s "$SIM/mnt/.stats" --argjson done "$(sed 1d "$ckpt" | jq .done)" '
    [$done[] | . as [$o, $l] |
        select([$s[0].disks.xvdb.allocated_extents[] |
                select(.[0] <= $o and .[0] + .[1] >= $o + $l)] | length == 0)] | length')
check_eq "$uncovered" 0 "ranges recorded done that the disk has not allocated"

"$prewarmd" prefill --strategy full --checkpoint "$ckpt" --json "$dev" >"$TEST_DIR/out.json" || fail "resume: exit $?"
check_eq "$(jq -r .state "$TEST_DIR/out.json")" warm "state after resuming"
check_eq "$(jq .resumed_bytes "$TEST_DIR/out.json")" "$done_bytes" "bytes resumed from the checkpoint"
check_eq "$(stat_of xvdb blocks_allocated)" "$(stat_of xvdb blocks_total)" "every block allocated"
check_eq "$(sed 1d "$ckpt" | jq .complete)" true "the checkpoint says complete"

# Done means done: a third run has nothing to do.
"$prewarmd" prefill --strategy full --checkpoint "$ckpt" --json "$dev" >"$TEST_DIR/again.json" || fail "again: exit $?"
check_eq "$(jq .written_bytes "$TEST_DIR/again.json")" 0 "bytes written by a run after completion"
