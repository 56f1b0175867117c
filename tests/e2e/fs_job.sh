# A filesystem job (`prewarmd prefill MOUNT_POINT`, full writes), on ext4 and
# xfs, while a workload writes and deletes files at full speed: the workload
# never gets an error and its files read back; the available space never falls
# below the reserve by more than the workload's largest write (8 MiB, taken from
# the free space at once) and two checks' worth of its writes; the filesystem
# checks clean; afterwards most of the disk is allocated by cowsim's counters,
# and once a second job (strategy auto: sparse where its probe finds cold
# whole-block space, full writes where the space is warm already) has run
# without the workload, a new 128 MiB file allocates at most a quarter of the 64
# blocks it would on a cold filesystem (ext4: 0 to 2 in the runs seen; xfs: 0 to
# 11, its allocator keeps some free space from the job's file: docs/engine.md); a
# SIGKILL mid-job leaves the free space as it was; an umount mid-job succeeds at
# once, and the next job takes back what that one claimed.
source "$(dirname "$0")/lib.sh"
require_devices
for tool in mkfs.ext4 mkfs.xfs e2fsck xfs_repair stat fsfreeze; do
    command -v "$tool" >/dev/null || cannot_run "no $tool"
done

sim_up --disk e=2GiB --disk x=2GiB
head -c 64M /dev/urandom >"$TEST_DIR/pool"

# Writes and deletes files in MOUNT until STOP exists; each file's checksum in
# MOUNT.sums, each failure in MOUNT.errors, the bytes written in MOUNT.bytes.
workload() { # MOUNT STOP
    local mount=$1 stop=$2 i=0 n bytes=0
    : >"$mount.sums"
    : >"$mount.errors"
    until [[ -e $stop ]]; do
        n=$((1 + i % 8))
        if dd if="$TEST_DIR/pool" of="$mount/w$i" bs=1M count="$n" skip=$((i % 50)) \
            conv=fsync status=none 2>>"$mount.errors"; then
            echo "$(head -c $((n << 20)) < <(tail -c +$(((i % 50 << 20) + 1)) "$TEST_DIR/pool") |
                sha256sum | cut -d' ' -f1)  w$i" >>"$mount.sums"
            bytes=$((bytes + (n << 20)))
        else
            echo "write w$i failed" >>"$mount.errors"
        fi
        # Keeps the newest 20 files: deletes as it writes.
        if ((i >= 20)); then
            rm -f "$mount/w$((i - 20))" || echo "rm failed" >>"$mount.errors"
            sed -i "/  w$((i - 20))\$/d" "$mount.sums"
        fi
        i=$((i + 1))
    done
    echo "$bytes" >"$mount.bytes"
}

# The least available space seen, every 10 ms, until STOP exists.
watch_space() { # MOUNT STOP OUT
    local least=-1 now
    until [[ -e $2 ]]; do
        now=$(avail "$1")
        ((least < 0 || now < least)) && least=$now
        sleep 0.01
    done
    echo "$least" >"$3"
}

for fs in ext4 xfs; do
    name=${fs:0:1}
    dev=$(dev_of "$name")
    mnt=$TEST_DIR/mnt-$fs
    "mkfs.$fs" -q "$dev"
    mount_for_test "$dev" "$mnt"
    size=$(($(stat -f -c '%b %S' "$mnt" | awk '{ print $1 * $2 }')))
    reserve=$((size / 10))

    stop=$TEST_DIR/stop-$fs
    workload "$mnt" "$stop" &
    load=$!
    watch_space "$mnt" "$stop" "$TEST_DIR/least-$fs" &
    watcher=$!
    on_cleanup "touch $stop; wait $load $watcher 2>/dev/null; true"
    started=$SECONDS
    sleep 0.5
    run_status "$prewarmd" prefill --reserve 10% --rate 512MiB/s --strategy full "$mnt" \
        >"$TEST_DIR/prefill-$fs.out" 2>&1
    sleep 0.5
    touch "$stop"
    wait "$load" "$watcher"
    elapsed=$((SECONDS - started + 1))
    check_eq "$status" 0 "$fs: the filesystem job's exit status"
    grep -q "^warm: " "$TEST_DIR/prefill-$fs.out" || fail "$fs: $(cat "$TEST_DIR/prefill-$fs.out")"
    pass "$fs: $(grep -m1 "^warm: " "$TEST_DIR/prefill-$fs.out")"

    check_eq "$(wc -l <"$mnt.errors")" 0 "$fs: the workload's errors ($(head -3 "$mnt.errors"))"
    written=$(cat "$mnt.bytes")
    check_ge "$written" $((64 << 20)) "$fs: bytes the workload wrote meanwhile"
    # A claim may take the space down to the reserve just before the workload's
    # next file (up to 8 MiB, reserved at once by the write): that file, and two
    # checks (50 ms each) of the workload's writes at its average rate.
    slack=$(((8 << 20) + written / elapsed / 10))
    check_ge "$(cat "$TEST_DIR/least-$fs")" $((reserve - slack)) \
        "$fs: the least available space seen (reserve $reserve, less $slack)"

    # The workload's files, read from the disk (a fresh mount: no cache).
    umount "$mnt"
    mount "$dev" "$mnt"
    (cd "$mnt" && sha256sum --quiet -c "$mnt.sums") || fail "$fs: a workload file does not read back"
    pass "$fs: the workload's $(wc -l <"$mnt.sums") files read back"

    # Warm: the blocks under the free space are allocated; after a second job, on
    # the quiet filesystem, a new file needs next to no new ones (64 if it were cold).
    # Cold at most: the reserve, and the space the filesystem keeps to itself,
    # counted neither free nor written (xfs: 32 MiB of reserved blocks and per-AG
    # metadata reservations): 64 MiB allowed for that.
    allocated=$(stat_of "$name" blocks_allocated)
    total=$(stat_of "$name" blocks_total)
    block=$(stat_of "$name" block_bytes)
    check_ge "$allocated" $((total - (reserve + (64 << 20) + block - 1) / block)) \
        "$fs: the disk's blocks allocated, of $total"
    run_status "$prewarmd" prefill --reserve 10% "$mnt" >"$TEST_DIR/again-$fs.out" 2>&1
    check_eq "$status" 0 "$fs: a second job, without the workload"
    pass "$fs: the second job: $(grep -m1 -E "^(sparse|full writes|probe in the claim): " "$TEST_DIR/again-$fs.out")"
    allocated=$(stat_of "$name" blocks_allocated)
    pass "$fs: $((allocated * 100 / total))% of the disk's blocks allocated after it"
    dd if="$TEST_DIR/pool" of="$mnt/after" bs=1M count=128 oflag=direct status=none 2>/dev/null ||
        dd if=/dev/urandom of="$mnt/after" bs=1M count=128 oflag=direct status=none
    sync
    fresh=$(($(stat_of "$name" blocks_allocated) - allocated))
    ((fresh <= 16)) || fail "$fs: a new 128 MiB file allocated $fresh new blocks (64 when cold)"
    pass "$fs: a new 128 MiB file allocated $fresh new blocks (64 when cold)"
    rm -f "$mnt/after"

    # SIGKILL mid-job: the process that waits for the job's end removes the claim.
    claim=$mnt/.prewarmd-claim
    before=$(settled_avail "$mnt")
    # Its descriptor 7, inherited without O_CLOEXEC (as the daemon's client
    # sockets are), must not live on in that process.
    "$prewarmd" prefill --reserve 10% --rate 32MiB/s "$mnt" >/dev/null 2>&1 7>"$TEST_DIR/inherited" &
    job=$!
    on_cleanup "kill -KILL $job 2>/dev/null; wait $job 2>/dev/null; true"
    wait_for_claim "$mnt" "$before"
    reaper=$(pgrep -P "$job" -f __reap-claim) || fail "$fs: no process waits to remove the claim"
    check_eq "$(find "/proc/$reaper/fd" -mindepth 1 -printf '%f\n' | sort -n | tr '\n' ' ')" "0 1 2 " \
        "$fs: the descriptors of the process that removes the claim"
    kill -KILL "$job"
    wait "$job" 2>/dev/null || true
    for _ in $(seq 50); do [[ -e $claim ]] || break; sleep 0.1; done
    [[ ! -e $claim ]] || fail "$fs: the claim is still there 5 s after a SIGKILL"
    check_eq "$(settled_avail "$mnt")" "$before" "$fs: the available space after a SIGKILL mid-job"

    # umount mid-job succeeds at the first try (the claim is open only for
    # milliseconds at a time); the job stops writing; the claim it leaves in the
    # unmounted filesystem (at most 1 GiB) goes with the next job there.
    "$prewarmd" prefill --reserve 10% --rate 32MiB/s "$mnt" >"$TEST_DIR/umount-$fs.out" 2>&1 &
    job=$!
    on_cleanup "kill -KILL $job 2>/dev/null; wait $job 2>/dev/null; true"
    wait_for_claim "$mnt" "$before"
    umount "$mnt" 2>"$TEST_DIR/umount-$fs.err" || fail "$fs: umount mid-job: $(cat "$TEST_DIR/umount-$fs.err")"
    pass "$fs: umount mid-job succeeded at once"
    run_status wait "$job"
    grep -q "was unmounted" "$TEST_DIR/umount-$fs.out" ||
        fail "$fs: the job did not say the filesystem went: $(tail -3 "$TEST_DIR/umount-$fs.out")"
    pass "$fs: the job stopped: $(grep -m1 -o "the filesystem at .* was unmounted" "$TEST_DIR/umount-$fs.out")"
    mount "$dev" "$mnt"
    left=$(stat -c %b "$claim" 2>/dev/null || echo 0)
    check_le $((left * 512)) $((1 << 30)) "$fs: bytes the claim left behind holds"
    run_status "$prewarmd" prefill --reserve 10% "$mnt" >"$TEST_DIR/after-umount-$fs.out" 2>&1
    check_eq "$status" 0 "$fs: the next job"
    [[ ! -e $claim ]] || fail "$fs: the next job left its claim"
    check_eq "$(settled_avail "$mnt")" "$before" "$fs: the available space after the next job"

    umount "$mnt"
    if [[ $fs == ext4 ]]; then
        e2fsck -fn "$dev" >"$TEST_DIR/fsck-$fs" 2>&1 || fail "$fs: e2fsck: $(cat "$TEST_DIR/fsck-$fs")"
    else
        xfs_repair -n "$dev" >"$TEST_DIR/fsck-$fs" 2>&1 || fail "$fs: xfs_repair: $(cat "$TEST_DIR/fsck-$fs")"
    fi
    pass "$fs: the filesystem checks clean"
    mount "$dev" "$mnt" # for the cleanup's umount
done
