# A filesystem job's claim changed under it, on ext4 and xfs: truncated to nothing,
# or a hole punched in it, mid-job. The blocks it loses may go to anyone's next
# file at once, so the job must stop writing before its next write and say why; a
# file written into the space set free, right after, reads back as written, and
# the filesystem checks clean.
source "$(dirname "$0")/lib.sh"
require_devices
for tool in mkfs.ext4 mkfs.xfs e2fsck xfs_repair fallocate truncate fsfreeze; do
    command -v "$tool" >/dev/null || cannot_run "no $tool"
done

sim_up --disk e=1GiB --disk x=1GiB
head -c 256M /dev/urandom >"$TEST_DIR/data"

for fs in ext4 xfs; do
    dev=$(dev_of "${fs:0:1}")
    mnt=$TEST_DIR/mnt-$fs
    "mkfs.$fs" -q "$dev"
    mount_for_test "$dev" "$mnt"
    claim=$mnt/.prewarmd-claim
    for change in "truncate -s 0" "fallocate --punch-hole --keep-size --offset 0 --length 512MiB"; do
        what=${change%% *}
        before=$(settled_avail "$mnt")
        "$prewarmd" prefill --reserve 10% --rate 16MiB/s --strategy full "$mnt" \
            >"$TEST_DIR/$fs-$what.out" 2>&1 &
        job=$!
        on_cleanup "kill -KILL $job 2>/dev/null; wait $job 2>/dev/null; true"
        # Past the probe in the claim (it claims and gives back on its own), at its writes.
        for _ in $(seq 100); do
            grep -q "chunks, queue depth" "$TEST_DIR/$fs-$what.out" && break
            sleep 0.1
        done
        wait_for_claim "$mnt" "$before"
        $change "$claim"
        dd if="$TEST_DIR/data" of="$mnt/after" bs=1M oflag=direct status=none ||
            fail "$fs, $what: writing a file after the change"
        run_status wait "$job"
        grep -q "no longer holds what the job claimed" "$TEST_DIR/$fs-$what.out" ||
            fail "$fs, $what: the job did not stop for it: $(tail -3 "$TEST_DIR/$fs-$what.out")"
        pass "$fs, $what: the job stopped: $(grep -m1 -o "the claim in .*" "$TEST_DIR/$fs-$what.out")"
        if grep -q "^warm: " "$TEST_DIR/$fs-$what.out"; then fail "$fs, $what: the job said warm"; fi
        echo 3 >/proc/sys/vm/drop_caches
        cmp "$TEST_DIR/data" "$mnt/after" || fail "$fs, $what: the file written after it reads back otherwise"
        pass "$fs, $what: the file written into the space set free reads back as written"
        rm -f "$mnt/after" "$claim"
    done
    umount "$mnt"
    if [[ $fs == ext4 ]]; then
        e2fsck -fn "$dev" >"$TEST_DIR/fsck-$fs" 2>&1 || fail "$fs: e2fsck: $(cat "$TEST_DIR/fsck-$fs")"
    else
        xfs_repair -n "$dev" >"$TEST_DIR/fsck-$fs" 2>&1 || fail "$fs: xfs_repair: $(cat "$TEST_DIR/fsck-$fs")"
    fi
    pass "$fs: the filesystem checks clean"
    mount "$dev" "$mnt" # for the cleanup's umount
done
