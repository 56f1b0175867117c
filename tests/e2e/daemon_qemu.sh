# The daemon on a backend that discards zero writes (QEMU's qcow2 with
# detect-zeroes=unmap and discard=unmap, as XCP-ng's qcow2 driver sets), judged by
# qemu-img map: a blank disk's block job warms nothing, and ends unproven, never
# warm; once the disk is formatted
# (ext4, with files) and mounted, its filesystem is warmed through its free space
# with the fill, to at least 90% of the free space above the reserve; the files
# read back as they were, the filesystem checks clean, and the job ends warm. On
# QEMU's defaults (zero writes kept) the block job warms the disk, and its probe
# proves it (a zero write costs 1.45x to 2x a read of never-written space there).
source "$(dirname "$0")/lib.sh"
require_devices
require_udevd
for tool in qemu-storage-daemon qemu-img mkfs.ext4 e2fsck; do
    command -v "$tool" >/dev/null || cannot_run "no $tool (packages qemu-system-common, qemu-utils)"
done
qemudisk=$PREWARMD_SRC/scripts/qemudisk
Q=$TEST_DIR/qemu
on_cleanup "$qemudisk down --state $Q"
# Under $TEST_DIR, so that sim_match (this test's loop devices) takes them too.
"$qemudisk" up --state "$Q" --disk unmap=1G,zeroes=unmap --disk kept=1G >"$TEST_DIR/devices"
allocated() { "$qemudisk" allocated "$1" --state "$Q" | cut -d' ' -f1; }
pattern() { echo "_exports_$1-[0-9]+ \(loop[0-9]+\)"; }

start_daemon '[discovery]
match = '"$(sim_match)"'
attach_grace = "1s"
[prefill]
total_rate = "unlimited"
max_parallel = 2
filesystem_reserve = 10'

wait_for_log "$(pattern kept): running -> warm" 60
check_ge "$(allocated kept)" $(((1 << 30) * 99 / 100)) "kept: bytes allocated by QEMU (99% of the disk)"

wait_for_log "$(pattern unmap): running -> unproven: (written, not proven warm: zero writes unknown|nothing written)" 60
wait_for_log "$(pattern unmap): unproven: [0-9.]+ [KMG]?i?B written"
echo "note: unmap: $(allocated unmap) bytes allocated by QEMU after the block job"

dev=$(dev_of unmap)
mnt=$TEST_DIR/mnt
mkfs.ext4 -q "$dev"
# Counted before the mount: the job may fill while the file is written. The file's
# 64 MiB and the fill both allocate, whichever comes first.
before=$(allocated unmap)
mount_for_test "$dev" "$mnt"
head -c 64M /dev/urandom >"$mnt/f"
sha=$(sha "$mnt/f")
sync -f "$mnt"
reserve=$(($(stat -f -c '%b * %S' "$mnt") / 10))
wait_for_log "$(pattern unmap): unproven -> queued: the free space of ext4 at $mnt" 30
wait_for_log "_exports_unmap-[0-9]+: .*this backend discards zero writes" 60
wait_for_log "$(pattern unmap): running -> warm: filled" 120
free=$(settled_avail "$mnt")
check_ge $(($(allocated unmap) - before)) $(((64 << 20) + (free - reserve) * 90 / 100)) \
    "unmap: bytes newly allocated by QEMU (the file and 90% of the free space above the reserve)"
check_eq "$(sha "$mnt/f")" "$sha" "unmap: the file reads back as it was"
umount "$mnt"
e2fsck -fn "$dev" >"$TEST_DIR/fsck.out" 2>&1 || fail "e2fsck: $(cat "$TEST_DIR/fsck.out")"
pass "unmap: the filesystem checks clean"
mount "$dev" "$mnt"
