# A disk that goes away mid-run: its job ends as detached, the daemon lets go of
# it, and when the same disk comes back (attached again, maybe under another name)
# it is judged afresh and, after the attach grace, the job resumes and finishes.
# What comes back is not taken at once: cloud-init's mkfs on a volume attached in
# a detached disk's place, right after the attach, succeeds, and the disk is left
# to it (its filesystem checks clean).
source "$(dirname "$0")/lib.sh"
require_devices
require_udevd

sim_up --disk gone=512MiB --disk other=512MiB
start_daemon '[discovery]
match = '"$(sim_match)"'
attach_grace = "1s"
[prefill]
total_rate = "64MiB/s"
checkpoint_interval = "1s"'
wait_for_log "$(disk_pattern gone): queued -> running"
sleep 2.5

control "vanish gone"               # its backend is gone: I/O fails with ENODEV
"$simdisk" detach gone --state "$SIM" # and the loop device is let go of
wait_for_log "$(disk_pattern gone): running -> detached"
check_eq "$(record_of gone state)" detached "the record"
partial=$(stat_of gone blocks_allocated)
[[ $partial -lt $(stat_of gone blocks_total) ]] || fail "it finished before going away"

wait_for_log "$(disk_pattern other): queued -> running"
control "vanish other"
"$simdisk" detach other --state "$SIM"
wait_for_log "$(disk_pattern other): running -> detached"

control "appear gone"
"$simdisk" attach gone --state "$SIM" >/dev/null
wait_for_log "$(disk_pattern gone): attached; its job goes on after the attach grace"

control "appear other"
"$simdisk" attach other --state "$SIM" >/dev/null
run_status mkfs.ext4 -q "$(dev_of other)"
check_eq "$status" 0 "mkfs.ext4 right after the attach: exit status"
# Seen in the grace, at the look on attach, or (when mkfs was done before the
# attach event reached the daemon and its look still found the disk blank) by the
# job's own look before its first write.
wait_for_log "$(disk_pattern other): .*-> skipped: (in use during the attach grace|attached again, refused|attached again, holds data now|not started: needs-request)" 40
e2fsck -fn "$(dev_of other)" >"$TEST_DIR/fsck" 2>&1 || fail "the formatted disk: e2fsck: $(cat "$TEST_DIR/fsck")"
pass "the formatted disk checks clean"
sed -i 's/total_rate = "64MiB\/s"/total_rate = "unlimited"/' "$TEST_DIR/prewarmd.toml"
kill -HUP "$DAEMON_PID"
wait_for_log "$(disk_pattern gone): running -> warm" 60
check_eq "$(stat_of gone blocks_allocated)" "$(stat_of gone blocks_total)" "every block allocated in the end"
