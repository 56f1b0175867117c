# A filesystem job on a backend that discards zero writes, judged by cowsim's
# counters (zeroes=unmap: QEMU's detect-zeroes=unmap, as XCP-ng's qcow2 driver
# sets): the probe in the claim finds the zero writes discarded, the job fills the
# free space that reads all-zero with 0xa5 bytes, and the blocks under the free
# space end up allocated; the files read back, a deleted file's remnants on the
# disk are as they were, and the filesystem checks clean. A second job finds the
# filled space warm already (it reads non-zero) and writes almost nothing.
source "$(dirname "$0")/lib.sh"
require_devices
for tool in mkfs.ext4 e2fsck filefrag cmp; do
    command -v "$tool" >/dev/null || cannot_run "no $tool"
done

# The link's pace makes a data write dearer than a zero write the backend drops,
# as storage does.
sim_up --bandwidth 50MiB/s --disk z=512MiB,zeroes=unmap
dev=$(dev_of z)
mnt=$TEST_DIR/mnt
mkfs.ext4 -q -E lazy_itable_init=0,lazy_journal_init=0 "$dev"
mount_for_test "$dev" "$mnt"
for i in 1 2 3; do head -c 5M /dev/urandom >"$mnt/keep$i"; done
(cd "$mnt" && sha256sum keep*) >"$TEST_DIR/sums"
# A deleted file: its 16 MiB stay on the disk, where filefrag said they were.
head -c 16M /dev/urandom >"$TEST_DIR/remnant"
cp "$TEST_DIR/remnant" "$mnt/r"
sync
filefrag -v "$mnt/r" | awk -F'[ .:]+' '/^ *[0-9]+:/ { print $3, $5, $7 - $5 + 1 }' >"$TEST_DIR/extents"
[[ -s $TEST_DIR/extents ]] || fail "no extents from filefrag: $(filefrag -v "$mnt/r")"
rm "$mnt/r"
sync

run_status "$prewarmd" prefill --reserve 5% "$mnt" >"$TEST_DIR/first.out" 2>&1
check_eq "$status" 0 "exit status ($(tail -1 "$TEST_DIR/first.out"))"
grep -q "^warm: " "$TEST_DIR/first.out" || fail "the filled job not called warm: $(cat "$TEST_DIR/first.out")"
grep -q "zero writes discarded (.*this backend discards zero writes)" "$TEST_DIR/first.out" ||
    fail "the probe in the claim did not find the zero writes discarded: $(cat "$TEST_DIR/first.out")"
grep -q "free space that reads all-zero is filled with 0xa5 bytes instead" "$TEST_DIR/first.out" ||
    fail "no fill: $(cat "$TEST_DIR/first.out")"
pass "the zero writes found discarded: the free space filled ($(grep -o "a zero write costs [^:]*" "$TEST_DIR/first.out"))"
check_ge $(($(stat_of z blocks_allocated) * 100 / $(stat_of z blocks_total))) 90 \
    "per cent of the disk's blocks allocated"

link=$(stat_of z link_bytes_written)
run_status "$prewarmd" prefill --reserve 5% "$mnt" >"$TEST_DIR/second.out" 2>&1
# Nothing left reads all-zero to probe: written little or nothing, and not called warm.
check_eq "$status" 8 "second job: exit status ($(tail -1 "$TEST_DIR/second.out"))"
grep -q "^unproven: " "$TEST_DIR/second.out" || fail "second job: $(cat "$TEST_DIR/second.out")"
check_le $(($(stat_of z link_bytes_written) - link)) $((512 * 1024 * 1024 / 10)) \
    "second job: bytes written (10% of the disk at most: the filled space reads non-zero)"

umount "$mnt"
mount "$dev" "$mnt"
(cd "$mnt" && sha256sum --quiet -c "$TEST_DIR/sums") || fail "a file does not read back"
pass "the files read back"
# The remnant, 4 KiB block by block (the filesystem may put a block or two of its
# own there).
: >"$TEST_DIR/differ"
while read -r logical physical length; do
    cmp -l <(dd if="$TEST_DIR/remnant" bs=4096 skip="$logical" count="$length" status=none) \
        <(dd if="$dev" bs=4096 skip="$physical" count="$length" iflag=direct status=none) |
        awk -v base="$logical" '{ print base + int(($1 - 1) / 4096) }' | uniq >>"$TEST_DIR/differ" || true
done <"$TEST_DIR/extents"
check_le "$(sort -u "$TEST_DIR/differ" | wc -l)" 2 "4 KiB blocks of the deleted file's remnants that changed"
umount "$mnt"
e2fsck -fn "$dev" >"$TEST_DIR/fsck" 2>&1 || fail "e2fsck: $(cat "$TEST_DIR/fsck")"
pass "the filesystem checks clean"
mount "$dev" "$mnt" # for the cleanup's umount
