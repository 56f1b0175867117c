# A disk that goes away mid-run: its job ends as detached, the daemon lets go of
# it, and when the same disk comes back (attached again, maybe under another name)
# the job resumes and finishes.
source "$(dirname "$0")/lib.sh"
require_devices
require_udevd

sim_up --disk gone=512MiB
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

control "appear gone"
"$simdisk" attach gone --state "$SIM" >/dev/null
wait_for_log "$(disk_pattern gone): attached; resuming its job"
sed -i 's/total_rate = "64MiB\/s"/total_rate = "unlimited"/' "$TEST_DIR/prewarmd.toml"
kill -HUP "$DAEMON_PID"
wait_for_log "$(disk_pattern gone): running -> done" 60
check_eq "$(stat_of gone blocks_allocated)" "$(stat_of gone blocks_total)" "every block allocated in the end"
