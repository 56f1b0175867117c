# A warm disk given back by discards is warmed again, judged by qemu-img map
# (QEMU's qcow2 with discard=unmap, zero writes kept): the block job warms the
# blank disk; mkfs.ext4, which discards the whole device first, gives every cluster
# back, and the daemon says so; once the filesystem is mounted its free space is
# warmed. Then fstrim gives the free space back, and it is warmed once more. Each
# time at least 85% of the free space above the reserve is allocated again; the
# file reads back as it was, and the filesystem checks clean.
source "$(dirname "$0")/lib.sh"
require_devices
require_udevd
for tool in qemu-storage-daemon qemu-img mkfs.ext4 e2fsck fstrim; do
    command -v "$tool" >/dev/null || cannot_run "no $tool (packages qemu-system-common, qemu-utils, util-linux)"
done
qemudisk=$PREWARMD_SRC/scripts/qemudisk
Q=$TEST_DIR/qemu
on_cleanup "$qemudisk down --state $Q"
# Under $TEST_DIR, so that sim_match (this test's loop devices) takes it too.
"$qemudisk" up --state "$Q" --disk d=1G,discard=unmap >"$TEST_DIR/devices"
allocated() { "$qemudisk" allocated d --state "$Q" | cut -d' ' -f1; }
pattern="_exports_d-[0-9]+ \(loop[0-9]+\)"
# A line like PATTERN in the daemon's log after its first FROM lines.
wait_for_log_after() { # FROM PATTERN SECONDS
    local deadline=$((SECONDS + $3))
    until tail -n +"$(($1 + 1))" "$DAEMON_LOG" | grep -Eq "$2"; do
        ((SECONDS < deadline)) || fail "no line like '$2' after line $1 in $3 s:
$(tail -n 40 "$DAEMON_LOG")"
        sleep 0.2
    done
    pass "log: $(tail -n +"$(($1 + 1))" "$DAEMON_LOG" | grep -Em1 "$2" | cut -d' ' -f3-)"
}

start_daemon '[discovery]
match = '"$(sim_match)"'
attach_grace = "1s"
[prefill]
total_rate = "unlimited"
filesystem_reserve = 10'

wait_for_log "$pattern: running -> warm" 60
check_ge "$(allocated)" $(((1 << 30) * 99 / 100)) "bytes allocated by QEMU after the block job (99%)"

dev=$(dev_of d)
mnt=$TEST_DIR/mnt
# The file is put in by mkfs (-d), so that nothing is written once it is mounted
# but by the job.
mkdir "$TEST_DIR/files"
head -c 64M /dev/urandom >"$TEST_DIR/files/f"
sha=$(sha "$TEST_DIR/files/f")
mkfs.ext4 -q -d "$TEST_DIR/files" "$dev"
check_le "$(allocated)" $(((1 << 30) * 15 / 100)) "bytes allocated after mkfs, which discards (15% at most)"
wait_for_log "$pattern: [0-9.]+ [KMG]i?B discarded since it was warm \(fstrim, mkfs, blkdiscard\): warmed again" 30

# The free space's share warmed: QEMU's allocation grown, against the free space
# above the reserve (once the job is over: its claim is free space again).
warmed_again() { # ALLOCATED_BEFORE WHAT
    local reserve
    reserve=$(($(stat -f -c '%b * %S' "$mnt") / 10))
    check_ge $(($(allocated) - $1)) $((($(settled_avail "$mnt") - reserve) * 85 / 100)) \
        "$2: bytes newly allocated by QEMU (85% of the free space above the reserve)"
}
before=$(allocated)
lines=$(grep -c . "$DAEMON_LOG")
mount_for_test "$dev" "$mnt"
wait_for_log_after "$lines" "$pattern: [a-z]+ -> queued: the free space of ext4 at $mnt" 30
wait_for_log_after "$lines" "$pattern: running -> warm" 120
warmed_again "$before" "after mkfs"
lines=$(grep -c . "$DAEMON_LOG")

sync -f "$mnt" # the job's claim freed: ext4 trims only blocks freed in a committed transaction
fstrim "$mnt"
sync -f "$mnt"
before=$(allocated)
check_le "$before" $((150 << 20)) "bytes allocated after fstrim (the file and ext4's own, 150 MiB at most)"
wait_for_log_after "$lines" "$pattern: [0-9.]+ [KMG]i?B discarded since it was warm" 30
wait_for_log_after "$lines" "$pattern: [a-z]+ -> queued: the free space of ext4 at $mnt" 30
wait_for_log_after "$lines" "$pattern: running -> warm" 120
warmed_again "$before" "after fstrim"

check_eq "$(sha "$mnt/f")" "$sha" "the file reads back as it was"
umount "$mnt"
e2fsck -fn "$dev" >"$TEST_DIR/fsck.out" 2>&1 || fail "e2fsck: $(cat "$TEST_DIR/fsck.out")"
pass "the filesystem checks clean"
mount "$dev" "$mnt" # as it was, for the cleanup
