# The D-Bus API on a private bus with prewarmd's bus policy: methods, properties,
# errors by name, the signals (JobStateChanged, Progress, PropertiesChanged,
# DiskAdded, DiskRemoved, InterfacesAdded/Removed), and who may change what.
source "$(dirname "$0")/lib.sh"
require_devices
require_udevd
command -v busctl >/dev/null || cannot_run "no busctl (package systemd)"
command -v dbus-send >/dev/null || cannot_run "no dbus-send (package dbus-bin)"
command -v setpriv >/dev/null || cannot_run "no setpriv (package util-linux)"

start_bus
start_fake_system_bus --state running
sim_up --disk a=512MiB
api_config
start_daemon "[discovery]
match = $(sim_match)
attach_grace = \"1s\"
[prefill]
auto_prefill = \"never\"
total_rate = \"32MiB/s\"
$API_CONFIG
[dbus]
address = \"$BUS\""
wait_for_log "dbus: org.prewarmd.Prewarmd1 on $BUS"

pbus monitor org.prewarmd.Prewarmd1 --json=short >"$TEST_DIR/signals" 2>&1 &
monitor=$!
on_cleanup "kill $monitor 2>/dev/null; wait $monitor 2>/dev/null || true"
# It is listening once it shows a call of ours.
for _ in $(seq 50); do
    pbus call "${manager[@]}" ListDisks >/dev/null
    grep -q '"member":"ListDisks"' "$TEST_DIR/signals" && break
    sleep 0.1
done
grep -q '"member":"ListDisks"' "$TEST_DIR/signals" || fail "busctl monitor saw nothing in 5 s"

pbus --json=short call "${manager[@]}" ListDisks >"$TEST_DIR/list"
a=$(basename "$(dev_of a)")
id=$(jq -r --arg n "$a" '.data[0][] | select(.[2] == $n) | .[0]' "$TEST_DIR/list")
path=$(jq -r --arg n "$a" '.data[0][] | select(.[2] == $n) | .[1]' "$TEST_DIR/list")
[[ $id == loop-* && $path == /org/prewarmd/Prewarmd1/disks/loop_2d* ]] ||
    fail "ListDisks: no loop disk: $(cat "$TEST_DIR/list")"
pass "ListDisks: $id at $path"
disk() { pbus get-property org.prewarmd.Prewarmd1 "$path" org.prewarmd.Prewarmd1.Disk "$@"; }
check_eq "$(disk State)" 's "discovered"' "State before a request"
check_eq "$(disk Id)" "s \"$id\"" "Id"
check_eq "$(pbus get-property "${manager[@]}" BootFinished)" "b true" "BootFinished"

check_eq "$(pbus call "${manager[@]}" Start 'sa{sv}' "$id" 2 queue_depth u 4 mode s zero)" "o \"$path\"" \
    "Start with options returns the disk's object"
wait_for_log "$(disk_pattern a): queued -> running"
check_eq "$(disk State)" 's "running"' "State"
check_eq "$(pbus call "${manager[@]}" Start 'sa{sv}' "$id" 0)" "o \"$path\"" "Start again: the same job"
sleep 1.5
check_ge "$(disk DoneBytes | cut -d' ' -f2)" 1 "DoneBytes while running"
pbus call "${manager[@]}" Pause s "$id" || fail "Pause"
check_eq "$(disk State)" 's "paused"' "State after Pause"
pbus call "${manager[@]}" Resume s "$id" || fail "Resume"
pbus call "${manager[@]}" Release s "$id" || fail "Release"
wait_for_log "$(disk_pattern a): running -> released"
pbus call "${manager[@]}" Start 'sa{sv}' "$id" 0 >/dev/null || fail "Start after Release"
wait_for_log "resuming from .*_mnt_a-"
pbus call "${manager[@]}" Cancel s "$id" || fail "Cancel"
wait_for_log "$(disk_pattern a): running -> cancelled"

# Errors by name, and nothing changed by them.
error_of() { # METHOD ARGS...: the error name dbus-send prints
    dbus-send --bus="$BUS" --print-reply --dest=org.prewarmd.Prewarmd1 /org/prewarmd/Prewarmd1 \
        "org.prewarmd.Prewarmd1.Manager.$1" "${@:2}" 2>&1 | sed -n 's/^Error \([^:]*\):.*/\1/p'
}
check_eq "$(error_of Pause string:no-such-disk)" org.prewarmd.Prewarmd1.Error.UnknownDisk "Pause an unknown disk"
check_eq "$(error_of Resume "string:$id")" org.prewarmd.Prewarmd1.Error.WrongState "Resume a cancelled job"
# (dbus-send cannot send a{sv}: busctl, which prints the message without the name.)
refused_start() { # WHAT MESSAGE OPTIONS...
    if pbus call "${manager[@]}" Start 'sa{sv}' "$id" "${@:3}" 2>"$TEST_DIR/err"; then
        fail "$1: taken"
    fi
    grep -qF "$2" "$TEST_DIR/err" || fail "$1: $(cat "$TEST_DIR/err")"
    pass "$1: $(cat "$TEST_DIR/err")"
}
refused_start "Start with an unknown option" "unknown option colour" 1 colour s red
refused_start "Start with a wrong type" "queue_depth is an unsigned 32-bit integer" 1 queue_depth s 8
refused_start "Start with a value out of range" "queue_depth is from 1 to 64" 1 queue_depth u 0
check_eq "$(disk State)" 's "cancelled"' "State after the refused calls"

# Settings as properties; the HTTP API's changes show here too.
pbus set-property "${manager[@]}" MaxParallel u 3 || fail "set MaxParallel"
check_eq "$(pbus get-property "${manager[@]}" MaxParallel)" "u 3" "MaxParallel after set"
if pbus set-property "${manager[@]}" MaxParallel u 0 2>"$TEST_DIR/err"; then fail "MaxParallel 0 was taken"; fi
check_eq "$(pbus get-property "${manager[@]}" MaxParallel)" "u 3" "MaxParallel after a refused set"
if pbus set-property "${manager[@]}" MaxParallel u 64 2>"$TEST_DIR/err"; then fail "MaxParallel 64 was taken"; fi
grep -q "OverBudget\|over the 256.0 MiB budget" "$TEST_DIR/err" || fail "MaxParallel 64 refused as: $(cat "$TEST_DIR/err")"
check_eq "$(pbus get-property "${manager[@]}" MaxParallel)" "u 3" "MaxParallel after one over the budget"
curl -sf --unix-socket "$API_SOCKET" -X PATCH http://x/v1/settings -H 'Content-Type: application/json' \
    -d '{"auto_prefill": "blank"}' >/dev/null ||
    fail "PATCH over HTTP"
check_eq "$(pbus get-property "${manager[@]}" AutoPrefill)" 's "blank"' "AutoPrefill after an HTTP PATCH"

# Who may: anyone reads, only root (and the group) changes; the bus policy says so.
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
as_nobody busctl --address="$BUS" call "${manager[@]}" ListDisks >/dev/null || fail "ListDisks as nobody"
as_nobody busctl --address="$BUS" get-property org.prewarmd.Prewarmd1 "$path" org.prewarmd.Prewarmd1.Disk State \
    >/dev/null || fail "a property as nobody"
pass "nobody may list the disks and read their properties"
run_status as_nobody busctl --address="$BUS" call "${manager[@]}" Start 'sa{sv}' "$id" 0
check_eq "$status" 1 "Start as nobody: refused"
run_status as_nobody busctl --address="$BUS" set-property "${manager[@]}" MaxParallel u 5
check_eq "$status" 1 "setting MaxParallel as nobody: refused"
check_eq "$(pbus get-property "${manager[@]}" MaxParallel)" "u 3" "MaxParallel after nobody tried"

# A disk comes and goes.
pbus set-property "${manager[@]}" AutoPrefill s never || fail "set AutoPrefill"
loop_file hot 64MiB
wait_for_log "loop-.*_hot.raw-67108864 \($(basename "$LOOP")\): discovered"
hot_id=$(pbus --json=short call "${manager[@]}" ListDisks | jq -r '.data[0][] | select(.[0] | test("_hot.raw-")) | .[0]')
[[ -n $hot_id ]] || fail "the new disk is not listed"
losetup -d "$LOOP"
wait_for_log "$hot_id \(.*\): detached"
for member in DiskRemoved InterfacesRemoved; do
    wait_for_line "$TEST_DIR/signals" "\"member\":\"$member\"" 10
done

kill "$monitor"
wait "$monitor" 2>/dev/null || true
grep '^{' "$TEST_DIR/signals" >"$TEST_DIR/messages" || true
signal_count() { # MEMBER [PATH]
    jq -r --arg m "$1" --arg p "${2:-}" \
        'select(.type == "signal" and .member == $m and ($p == "" or .path == $p)) | .member' \
        "$TEST_DIR/messages" | wc -l
}
check_ge "$(signal_count JobStateChanged)" 6 "JobStateChanged signals"
check_ge "$(signal_count Progress)" 1 "Progress signals"
check_ge "$(signal_count PropertiesChanged "$path")" 2 "PropertiesChanged on the disk"
check_ge "$(signal_count PropertiesChanged /org/prewarmd/Prewarmd1)" 2 "PropertiesChanged on the manager"
check_ge "$(signal_count DiskAdded)" 1 "DiskAdded"
check_ge "$(signal_count DiskRemoved)" 1 "DiskRemoved"
check_ge "$(signal_count InterfacesAdded)" 1 "InterfacesAdded (ObjectManager)"
check_ge "$(signal_count InterfacesRemoved)" 1 "InterfacesRemoved (ObjectManager)"
jq -es --arg id "$id" \
    'any(.[]; .member == "JobStateChanged" and .payload.data[0] == $id and .payload.data[2] == "paused")' \
    "$TEST_DIR/messages" >/dev/null || fail "no JobStateChanged to paused for $id"
pass "JobStateChanged carried the pause"
