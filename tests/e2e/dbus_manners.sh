# The daemon's manners at boot, sleep and shutdown, against stand-ins for systemd
# and logind on a private bus: auto prefill waits for the boot to finish; a delay
# inhibitor is held while a job runs; a coming sleep or shutdown stops the jobs
# checkpointed and gives the inhibitor back; they go on after. Then: without
# logind, and without any bus, a warning and the rest works. Also the daemon's own
# check of who may change things, on a bus with no policy.
source "$(dirname "$0")/lib.sh"
require_devices
command -v busctl >/dev/null || cannot_run "no busctl (package systemd)"
command -v setpriv >/dev/null || cannot_run "no setpriv (package util-linux)"
command -v dbus-send >/dev/null || cannot_run "no dbus-send (package dbus-bin)"

start_bus open
start_fake_system_bus --state starting
sim_up --disk a=512MiB
config_on() { # BUS
    printf '[discovery]\nmatch = %s\nattach_grace = "1s"\n[prefill]\ntotal_rate = "24MiB/s"\n' "$(sim_match)"
    printf '[dbus]\naddress = "%s"\n' "$1"
}
start_daemon "$(config_on "$BUS")"
wait_for_log "waiting for the boot to finish \(systemd: starting\)"
wait_for_log "$(disk_pattern a): waiting -> waiting: waiting for the boot to finish"
wait_for_line "$FAKE_OUT" "^subscribed$"
check_eq "$(pbus get-property "${manager[@]}" BootFinished)" "b false" "BootFinished while the boot runs"
if grep -q "^inhibit" "$FAKE_OUT"; then fail "an inhibitor was taken with no job running"; fi
pass "no inhibitor while no job runs"

# With no bus policy, the daemon itself refuses changes from others.
id=$(pbus --json=short call "${manager[@]}" ListDisks |
    jq -r --arg n "$(basename "$(dev_of a)")" '.data[0][] | select(.[2] == $n) | .[0]')
setpriv --reuid=65534 --regid=65534 --clear-groups dbus-send --bus="$BUS" --print-reply \
    --dest=org.prewarmd.Prewarmd1 /org/prewarmd/Prewarmd1 org.prewarmd.Prewarmd1.Manager.Pause \
    "string:$id" >"$TEST_DIR/err" 2>&1 || true
grep -q "^Error org.freedesktop.DBus.Error.AccessDenied: this command is for root and the group prewarmd (uid 65534 is neither)" "$TEST_DIR/err" ||
    fail "not the daemon's refusal: $(cat "$TEST_DIR/err")"
pass "the daemon refuses nobody: $(cat "$TEST_DIR/err")"

fake_bus boot-finished
wait_for_log "the boot has finished \(systemd\)"
wait_for_log "$(disk_pattern a): queued -> running"
wait_for_line "$FAKE_OUT" "^inhibit shutdown:sleep delay \(id 1\) by prewarmd"
pass "a delay inhibitor for shutdown and sleep while the job runs"
check_eq "$(pbus get-property "${manager[@]}" BootFinished)" "b true" "BootFinished after the boot"

sleep 1
fake_bus sleep true
wait_for_log "$(disk_pattern a): running -> waiting: the system is going to sleep"
wait_for_line "$FAKE_OUT" "^released 1$"
pass "the inhibitor was given back once the job had stopped"
check_eq "$(record_of a state)" running "the record while asleep (resumes after a reboot)"
fake_bus sleep false
wait_for_log "$(disk_pattern a): queued -> running"
wait_for_log "resuming from .*_mnt_a-"
wait_for_line "$FAKE_OUT" "^inhibit shutdown:sleep delay \(id 2\)"
pass "after the wake-up: running again, and the inhibitor taken again"

sleep 1
fake_bus shutdown true
wait_for_log "$(disk_pattern a): running -> waiting: the system is shutting down"
wait_for_line "$FAKE_OUT" "^released 2$"
done_before=$(record_of a done_bytes)
check_ge "$done_before" 1 "bytes checkpointed before the shutdown"
stop_daemon
check_eq "$(record_of a state)" running "the record after the shutdown"
: >"$DAEMON_LOG"
start_daemon "$(config_on "$BUS")"
wait_for_log "resuming from .*_mnt_a-"
wait_for_log "$(disk_pattern a): queued -> running"
pass "after the reboot the job goes on from its checkpoint"
stop_daemon

# Without logind: a warning, and jobs still run.
start_bus open
start_fake_system_bus --state running --no-logind
: >"$DAEMON_LOG"
rm -rf "$TEST_DIR/state"
start_daemon "$(config_on "$BUS")"
wait_for_log "logind does not answer on .*: no shutdown inhibitor; jobs checkpoint on SIGTERM only"
wait_for_log "$(disk_pattern a): queued -> running"
stop_daemon

# Without any bus: a warning, and the HTTP API and the jobs work.
: >"$DAEMON_LOG"
rm -rf "$TEST_DIR/state"
start_daemon "$(config_on "unix:path=$TEST_DIR/no-such-bus")"
wait_for_log "D-Bus: .*no-such-bus.*: no D-Bus API, no boot wait, no shutdown inhibitor; the rest works"
wait_for_api
wait_for_log "$(disk_pattern a): queued -> running"
