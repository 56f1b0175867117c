# Sparse filesystem jobs, judged by cowsim's counters: on a whole-block backend
# that allocates on the storage host, `prewarmd prefill MOUNT_POINT` (strategy
# auto) probes in its own claim, writes one 4 KiB piece per block, and the blocks
# under the free space end up allocated with under 1% of the disk sent over the
# link; the files read back, a deleted file's remnants on the disk are as they
# were, and the filesystem checks clean. On a sector-bitmap backend auto chooses
# full writes, and a forced sparse job fails before it writes, saying why. Before
# the job, `prewarmd inspect` says the filesystem is warmed online, and whether
# fstrim.timer is on.
source "$(dirname "$0")/lib.sh"
require_devices
for tool in mkfs.ext4 e2fsck filefrag cmp; do
    command -v "$tool" >/dev/null || cannot_run "no $tool"
done

sim_up --host-allocation --disk whole=2GiB --disk bitmap=1GiB,bitmap=on --disk forced=1GiB,bitmap=on

# ext4 without the lazy initialisation that would write the disk meanwhile.
make_fs() { # NAME
    mkfs.ext4 -q -E lazy_itable_init=0,lazy_journal_init=0 "$(dev_of "$1")"
    mount_for_test "$(dev_of "$1")" "$TEST_DIR/mnt-$1"
}

make_fs whole
mnt=$TEST_DIR/mnt-whole
dev=$(dev_of whole)
for i in 1 2 3; do head -c 5M /dev/urandom >"$mnt/keep$i"; done
(cd "$mnt" && sha256sum keep*) >"$TEST_DIR/sums"
# A deleted file: its 32 MiB stay on the disk, where filefrag said they were.
mkdir "$mnt/gone"
head -c 32M /dev/urandom >"$TEST_DIR/remnant"
cp "$TEST_DIR/remnant" "$mnt/gone/r"
sync
filefrag -v "$mnt/gone/r" | awk -F'[ .:]+' '/^ *[0-9]+:/ { print $3, $5, $7 - $5 + 1 }' >"$TEST_DIR/extents"
[[ -s $TEST_DIR/extents ]] || fail "no extents from filefrag: $(filefrag -v "$mnt/gone/r")"
rm "$mnt/gone/r"
sync

# inspect says the filesystem is warmed online, and whether fstrim.timer is on.
report=$("$prewarmd" inspect --json --match 'name:loop*' "$dev" | jq '.[0]')
check_eq "$(jq -r '.filesystems[0].mount_point, .filesystems[0].warmed_online' <<<"$report" | paste -sd' ')" \
    "$mnt true" "inspect: the filesystem, warmed online"
fstrim=false
[[ -e /etc/systemd/system/timers.target.wants/fstrim.timer ]] && fstrim=true
check_eq "$(jq -r .fstrim_timer_active <<<"$report")" "$fstrim" "inspect: fstrim.timer active"

link=$(stat_of whole link_bytes_written)
run_status "$prewarmd" prefill --reserve 5% "$mnt" >"$TEST_DIR/whole.out" 2>&1
check_eq "$status" 0 "whole: exit status ($(tail -1 "$TEST_DIR/whole.out"))"
grep -q "sparse: one 4.00 KiB write per 2.00 MiB block (.* a first write warms its whole block)" \
    "$TEST_DIR/whole.out" || fail "whole: not sparse: $(cat "$TEST_DIR/whole.out")"
pass "whole: $(grep -m1 -o "sparse: .*" "$TEST_DIR/whole.out")"
sent=$(($(stat_of whole link_bytes_written) - link))
check_le "$sent" $((2 * 1024 * 1024 * 1024 / 100)) "whole: bytes sent over the link by the job (1% of the disk at most)"
allocated=$(stat_of whole blocks_allocated)
total=$(stat_of whole blocks_total)
check_ge $((allocated * 100 / total)) 90 "whole: per cent of the disk's blocks allocated"
head -c 128M /dev/urandom | dd of="$mnt/after" bs=1M oflag=direct iflag=fullblock status=none
sync
fresh=$(($(stat_of whole blocks_allocated) - allocated))
# Full writes leave the same (93% allocated, 20 new blocks): the file lands partly
# in the space the reserve kept out of the claims.
check_le "$fresh" 24 "whole: new blocks a new 128 MiB file allocated (64 when cold)"
rm "$mnt/after"
umount "$mnt"
mount "$dev" "$mnt"
(cd "$mnt" && sha256sum --quiet -c "$TEST_DIR/sums") || fail "whole: a file does not read back"
pass "whole: the files read back"
# The remnant, 4 KiB block by block: a piece of zeros over it would show in 16
# blocks (one per 2 MiB); the filesystem may put a block or two of its own there.
: >"$TEST_DIR/differ"
while read -r logical physical length; do
    cmp -l <(dd if="$TEST_DIR/remnant" bs=4096 skip="$logical" count="$length" status=none) \
        <(dd if="$dev" bs=4096 skip="$physical" count="$length" iflag=direct status=none) |
        awk -v base="$logical" '{ print base + int(($1 - 1) / 4096) }' | uniq >>"$TEST_DIR/differ" || true
done <"$TEST_DIR/extents"
check_le "$(sort -u "$TEST_DIR/differ" | wc -l)" 2 "whole: 4 KiB blocks of the deleted file's remnants that changed"
umount "$mnt"
e2fsck -fn "$dev" >"$TEST_DIR/fsck" 2>&1 || fail "whole: e2fsck: $(cat "$TEST_DIR/fsck")"
pass "whole: the filesystem checks clean"
mount "$dev" "$mnt" # for the cleanup's umount

make_fs bitmap
link=$(stat_of bitmap link_bytes_written)
run_status "$prewarmd" prefill --reserve 5% "$TEST_DIR/mnt-bitmap" >"$TEST_DIR/bitmap.out" 2>&1
check_eq "$status" 0 "bitmap: exit status"
grep -q "full writes: the probe found per-sector allocation" "$TEST_DIR/bitmap.out" ||
    fail "bitmap: auto did not choose full writes: $(cat "$TEST_DIR/bitmap.out")"
pass "bitmap: auto chose full writes"
check_ge $(($(stat_of bitmap link_bytes_written) - link)) $((800 << 20)) "bitmap: bytes sent (the free space)"

make_fs forced
mnt=$TEST_DIR/mnt-forced
before=$(settled_avail "$mnt")
link=$(stat_of forced link_bytes_written)
run_status "$prewarmd" prefill --reserve 5% --strategy sparse "$mnt" >"$TEST_DIR/forced.out" 2>&1
check_eq "$status" 1 "forced sparse on a bitmap backend: exit status"
grep -q "sparse writes would leave the middle of the blocks cold: the probe found per-sector" \
    "$TEST_DIR/forced.out" || fail "forced: no reason given: $(cat "$TEST_DIR/forced.out")"
pass "forced sparse on a bitmap backend fails, saying why"
# The probe sends about 10 MiB (8 regions, each with 1.2 MiB of zero and data
# writes timed in pairs: docs/engine.md); a job would send the free space, 800 MiB.
check_le $(($(stat_of forced link_bytes_written) - link)) $((16 << 20)) "forced: bytes sent (the probe's and the claim's only)"
[[ ! -e $mnt/.prewarmd-claim ]] || fail "forced: the claim is left behind"
check_eq "$(settled_avail "$mnt")" "$before" "forced: the available space after it"
