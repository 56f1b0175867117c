# Jobs survive the daemon: killed with SIGKILL mid-run, it starts again and the job
# resumes from its checkpoint and finishes; SIGTERM checkpoints and exits 0 within
# 5 s, and the job resumes at the next start; SIGHUP reloads the config, and a
# broken one leaves the daemon running as it was.
source "$(dirname "$0")/lib.sh"
require_devices
require_udevd

sim_up --disk slow=512MiB
config='[discovery]
match = '"$(sim_match)"'
attach_grace = "1s"
[prefill]
total_rate = "64MiB/s"
checkpoint_interval = "1s"'

start_daemon "$config"
wait_for_log "$(disk_pattern slow): queued -> running"
sleep 3
kill -KILL "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null || true
done_at_kill=$(stat_of slow blocks_allocated)
check_ge "$done_at_kill" 1 "blocks allocated before SIGKILL"
[[ $done_at_kill -lt $(stat_of slow blocks_total) ]] || fail "finished before the kill"
check_eq "$(record_of slow state)" running "the record after SIGKILL"

start_daemon "$config"
wait_for_log "$(disk_pattern slow): attached; its job goes on after the attach grace"
wait_for_log "resuming from .*_mnt_slow-.*ckpt: [0-9.]+ MiB of 512.0 MiB done already"
sleep 1.5

# SIGTERM: within 5 s, exit 0, and the record still says running.
start=$(date +%s%N)
kill -TERM "$DAEMON_PID"
run_status wait "$DAEMON_PID"
stopped_ms=$((($(date +%s%N) - start) / 1000000))
check_eq "$status" 0 "exit status after SIGTERM"
check_ge 5000 "$stopped_ms" "milliseconds to stop on SIGTERM, at most"
check_eq "$(record_of slow state)" running "the record after SIGTERM"

start_daemon "$config
[rates]
\"$(sim_rule)\" = \"unlimited\""
wait_for_log "$(disk_pattern slow): attached; its job goes on after the attach grace"
wait_for_log "$(disk_pattern slow): running -> warm" 60
check_eq "$(stat_of slow blocks_allocated)" "$(stat_of slow blocks_total)" "every block allocated in the end"

# SIGHUP: the changed settings apply at once (what needs a restart is named, as the
# config unit tests check: here --state-dir makes the config's state_dir moot).
daemon_config "$config" >"$TEST_DIR/prewarmd.toml"
sed -i 's/total_rate = "64MiB\/s"/total_rate = "32MiB\/s"/' "$TEST_DIR/prewarmd.toml"
kill -HUP "$DAEMON_PID"
wait_for_log "reload: applied \[prefill\] total_rate \[rates\]$"
printf '[prefill]\nmax_parallel = "two"\n' >"$TEST_DIR/prewarmd.toml"
kill -HUP "$DAEMON_PID"
wait_for_log "reload: .*prewarmd.toml:2: \[prefill\] max_parallel: expected a whole number.*keeping the settings in force"
kill -0 "$DAEMON_PID" || fail "a bad reload stopped the daemon"
pass "a bad config at reload leaves the daemon running"
