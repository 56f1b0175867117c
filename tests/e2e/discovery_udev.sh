# With udevd running, discovery reports a simulated disk attached and detached (how
# soon is bench/'s to time, not a test's); attached again it keeps its identity; the attach grace tells a
# quiet disk from one another process opened.
source "$(dirname "$0")/lib.sh"
require_devices
require_udevd

out=$TEST_DIR/events
"$prewarmd" inspect --watch --json --grace 1500ms --match "$(sim_rule)" >"$out" 2>"$TEST_DIR/err" &
watcher=$!
on_cleanup "kill -INT $watcher; wait $watcher"
wait_for_line "$TEST_DIR/err" "watching for disks" 5

event_for() { # EVENT NAME: the first such JSON event, waiting up to 5 s
    for _ in $(seq 50); do
        local line
        line=$(jq -c --arg e "$1" --arg n "$2" 'select(.event == $e and .name == $n)' "$out" | sed -n 1p)
        if [[ -n $line ]]; then
            echo "$line"
            return 0
        fi
        sleep 0.1
    done
    fail "no $1 event for $2 in 5 s: $(cat "$out" "$TEST_DIR/err")"
}
sim_up --disk quiet=256MiB --disk busy=256MiB
quiet=$(basename "$(dev_of quiet)") busy=$(basename "$(dev_of busy)")
(exec sleep 5 <"/dev/$busy") &
holder=$!
on_cleanup "kill $holder"
event_for attached "$quiet" >"$TEST_DIR/attached"
check_eq "$(jq -r .verdict "$TEST_DIR/attached")" eligible "verdict of the new disk"
check_eq "$(jq -r .matched "$TEST_DIR/attached")" true "the new disk is considered"
identity=$(jq -r .identity "$TEST_DIR/attached")
[[ $identity == loop-* ]] || fail "identity $identity"

check_eq "$(event_for grace "$quiet" | jq -r .in_use)" false "grace: the quiet disk in use"
grace=$(event_for grace "$busy")
check_eq "$(jq -r .in_use <<<"$grace")" true "grace: the disk another process opened, in use"
# The holder is a subshell that opens the disk, then becomes sleep: seen before
# or after its exec, it is the same process.
[[ $(jq -r .why <<<"$grace") =~ ^"opened by "(sleep|bash)" (pid $holder)"$ ]] ||
    fail "grace reason: $(jq -r .why <<<"$grace")"
pass "the opener is named"

"$simdisk" detach quiet --state "$SIM"
event_for detached "$quiet" >/dev/null
pass "the detach was reported"

read -r _ again < <("$simdisk" attach quiet --state "$SIM")
again=$(basename "$again")
event_for attached "$again" >"$TEST_DIR/again"
[[ $again != "$quiet" ]] && echo "attached again as $again (was $quiet)"
check_eq "$(jq -r .identity "$TEST_DIR/again")" "$identity" "identity after attaching again"
