# The daemon warms filesystems by itself (docs/design.md): a disk formatted and
# mounted before the daemon starts (cloud-init's format at boot) is warmed through
# its filesystem's free space; a blank disk whose block job someone's mkfs and
# mount interrupt is warmed through its filesystem once mounted. The API says
# which kind of job and which mount point, the probe made in the job's claim and
# the strategy it proved (sparse: cowsim allocates whole blocks); an umount
# mid-job succeeds at once, and the job comes back with the next mount; the
# blocks under the free space end up allocated by cowsim's counters, and both
# filesystems check clean.
source "$(dirname "$0")/lib.sh"
require_devices
require_udevd
for tool in mkfs.ext4 mkfs.xfs e2fsck xfs_repair; do
    command -v "$tool" >/dev/null || cannot_run "no $tool"
done

sim_up --disk boot=1GiB --disk later=1GiB
boot_dev=$(dev_of boot)
later_dev=$(dev_of later)
mkfs.ext4 -q "$boot_dev"
mount_for_test "$boot_dev" "$TEST_DIR/boot"

start_daemon '[discovery]
match = '"$(sim_match)"'
attach_grace = "1s"
[prefill]
total_rate = "64MiB/s"
max_parallel = 2
filesystem_reserve = 10
strategy = "auto"'

# Formatted at boot: skipped as a disk, warmed as a filesystem.
wait_for_log "$(disk_pattern boot): skipped -> queued: the free space of ext4 at $TEST_DIR/boot"
wait_for_log "$(disk_pattern boot): queued -> running"
id=$(curl -s "$API/v1/disks" | jq -r --arg p "$(sim_id boot)" '.disks[] | select(.id | startswith($p)) | .id')
disk=$(curl -s "$API/v1/disks/$id")
check_eq "$(jq -r .job_kind <<<"$disk")" filesystem "the API: the kind of job"
check_eq "$(jq -r .filesystem.mount_point <<<"$disk")" "$TEST_DIR/boot" "the API: its mount point"
"$PREWARMD_BIN/prewarmctl" --socket "$API_SOCKET" show "$id" >"$TEST_DIR/show" 2>&1 || true
grep -q "job: *filesystem: the free space of ext4 on loop[0-9]* at $TEST_DIR/boot" "$TEST_DIR/show" ||
    fail "prewarmctl show does not say the kind of job: $(cat "$TEST_DIR/show")"
pass "prewarmctl show: $(grep -m1 "job:" "$TEST_DIR/show" | sed 's/^ *//')"
# cowsim allocates whole blocks: the probe in the job's claim proves sparse
# writes enough, and the API has the probe and the strategy. The verdict is a
# timing: other tests' I/O on the same 2 cores can make it "unknown" (full writes,
# never less warm), never per-sector.
wait_for_log "_mnt_boot-[0-9]+: (sparse: one 4.00 KiB write per 2.00 MiB block|full writes: the probe found unknown allocation)" 30
disk=$(curl -s "$API/v1/disks/$id")
if grep -Eq "_mnt_boot-[0-9]+: sparse: " "$DAEMON_LOG"; then
    check_eq "$(jq -r .probe.allocation <<<"$disk")" whole-block "the API: the probe's verdict"
    check_eq "$(jq -r .progress.strategy <<<"$disk")" sparse "the API: the strategy"
else
    echo "note: the probe in the claim could not tell (a loaded machine): full writes"
    check_eq "$(jq -r .probe.allocation <<<"$disk")" unknown "the API: the probe's verdict"
    check_eq "$(jq -r .progress.strategy <<<"$disk")" full "the API: the strategy"
fi
fstrim=false
[[ -e /etc/systemd/system/timers.target.wants/fstrim.timer ]] && fstrim=true
check_eq "$(jq -r .filesystem.fstrim_timer_active <<<"$disk")" "$fstrim" "the API: fstrim.timer active"

# umount mid-job: at once; the job stops; with the next mount it comes back.
sleep 1
umount "$TEST_DIR/boot" 2>"$TEST_DIR/umount.err" || fail "umount mid-job: $(cat "$TEST_DIR/umount.err")"
pass "umount mid-job succeeded at once"
wait_for_log "$(disk_pattern boot): running -> skipped: its filesystem job stopped: the filesystem at $TEST_DIR/boot was unmounted"
mount "$boot_dev" "$TEST_DIR/boot"
wait_for_log "$(disk_pattern boot): running -> warm" 60

# A blank disk: its block job runs; mkfs (no O_EXCL hold to fail on) and a mount
# make it step aside; its filesystem is warmed once mounted.
wait_for_log "$(disk_pattern later): queued -> running"
mkfs.xfs -q "$later_dev" 2>"$TEST_DIR/mkfs.err" || fail "mkfs.xfs during the block job: $(cat "$TEST_DIR/mkfs.err")"
mount_for_test "$later_dev" "$TEST_DIR/later"
wait_for_log "$(disk_pattern later): running -> waiting: stepped aside"
wait_for_log "$(disk_pattern later): skipped -> queued: the free space of xfs at $TEST_DIR/later" 30
wait_for_log "$(disk_pattern later): running -> warm" 60

for name in boot later; do
    allocated=$(stat_of "$name" blocks_allocated)
    total=$(stat_of "$name" blocks_total)
    check_ge $((allocated * 100 / total)) 85 "$name: per cent of the disk's blocks allocated"
    check_eq "$(record_of "$name" state)" warm "$name: recorded"
done
[[ ! -e $TEST_DIR/boot/.prewarmd-claim && ! -e $TEST_DIR/later/.prewarmd-claim ]] ||
    fail "a claim was left behind"
pass "no claim left behind"

stop_daemon
umount "$TEST_DIR/boot"
umount "$TEST_DIR/later"
e2fsck -fn "$boot_dev" >"$TEST_DIR/fsck" 2>&1 || fail "e2fsck: $(cat "$TEST_DIR/fsck")"
xfs_repair -n "$later_dev" >"$TEST_DIR/repair" 2>&1 || fail "xfs_repair: $(cat "$TEST_DIR/repair")"
pass "both filesystems check clean"
mount "$boot_dev" "$TEST_DIR/boot" # for the cleanup's umount
mount "$later_dev" "$TEST_DIR/later"
