# prewarmctl against a running daemon warming simulated disks: status, show, start
# (by kernel name, with options), wait (warm, unproven, failed, timed out), settings, the token
# over TCP,
# colours only on a terminal and never with NO_COLOR, watch redrawn in place and
# left cleanly on Ctrl-C, and every failure path with its documented exit code.
source "$(dirname "$0")/lib.sh"
require_devices
command -v script >/dev/null || cannot_run "no script (package bsdutils)"
ctl=$PREWARMD_BIN/prewarmctl
MiB=$((1024 * 1024))

sim_up --disk a=256MiB --disk bad=64MiB --disk slow=512MiB --disk tiny=4MiB
control "fail write bad range=$((32 * MiB))+4KiB"
a=$(basename "$(dev_of a)")
token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s\n' "$token" >"$TEST_DIR/token"
chmod 600 "$TEST_DIR/token"
api_config
start_daemon "[discovery]
match = $(sim_match)
[prefill]
auto_prefill = \"never\"
max_parallel = 3
total_rate = \"unlimited\"
$API_CONFIG
token_file = \"$TEST_DIR/token\""
wait_for_api
pc() { "$ctl" --socket "$API_SOCKET" "$@"; }
expect_exit() { # CODE WHAT COMMAND...: runs it, checks the exit code, keeps stderr
    local code=$1 what=$2
    shift 2
    run_status "$@" >"$TEST_DIR/out" 2>"$TEST_DIR/err"
    check_eq "$status" "$code" "$what: exit code"
}

expect_exit 0 "status" pc status
grep -q "^$a .*discovered" "$TEST_DIR/out" || fail "status: no $a: $(cat "$TEST_DIR/out")"
check_ge "$(pc --json status | jq '.disks | length')" 3 "disks in status --json"

# Over TCP a change needs the token; over the socket root needs none.
expect_exit 4 "start over TCP without the token" "$ctl" --url "$API" start "$a"
grep -q "give the token" "$TEST_DIR/err" || fail "$(cat "$TEST_DIR/err")"
expect_exit 0 "start by kernel name over TCP, token from PREWARMD_TOKEN" env PREWARMD_TOKEN="$token" \
    "$ctl" --url "$API" start "$a" --queue-depth 4
check_eq "$(head -1 "$TEST_DIR/out")" "$a: running" "what start prints"
grep -q "^$a is held exclusively until warm: .*prewarmctl release $a. lets go at once" "$TEST_DIR/out" ||
    fail "start does not say it holds the disk: $(cat "$TEST_DIR/out")"
tok() { pc --token-file "$TEST_DIR/token" "$@"; }
expect_exit 0 "start the disk that fails" tok start "$(dev_of bad)"

expect_exit 0 "wait for a disk to be warm" pc wait "$a" --timeout 60s
check_eq "$(cat "$TEST_DIR/out")" "$a: warm" "what wait prints"
# Under 8 MiB there is no room to probe: written, but nothing proves it warm.
expect_exit 0 "start a disk too small to probe" tok start "$(dev_of tiny)"
expect_exit 8 "wait for a disk that ends unproven" pc wait "$(dev_of tiny)" --timeout 60s
grep -q "^$(basename "$(dev_of tiny)"): unproven: written, not proven warm" "$TEST_DIR/out" ||
    fail "what wait prints of an unproven disk: $(cat "$TEST_DIR/out")"
pass "wait says unproven, and why: $(cat "$TEST_DIR/out")"
expect_exit 1 "wait for a failing disk" pc wait "$(dev_of bad)" --timeout 60s
grep -q "failed: write at offset $((32 * MiB)) failed" "$TEST_DIR/err" || fail "$(cat "$TEST_DIR/err")"
pass "wait names the failure: $(cat "$TEST_DIR/err")"
expect_exit 0 "start a slow disk" tok start "$(dev_of slow)" --rate 4MiB/s
expect_exit 7 "wait past its timeout" pc wait "$(dev_of slow)" --timeout 2s
grep -q "timed out after 2s" "$TEST_DIR/err" || fail "$(cat "$TEST_DIR/err")"
# Ctrl-C: wait dies of SIGINT, so that the script running it stops as well.
"$ctl" --socket "$API_SOCKET" wait "$(dev_of slow)" 2>"$TEST_DIR/err" &
waiter=$!
sleep 0.5
kill -INT "$waiter"
run_status wait "$waiter"
check_eq "$status" 130 "wait's status after SIGINT (128 + 2)"

expect_exit 0 "show" pc show "$a"
grep -q "^  state:     warm" "$TEST_DIR/out" || fail "show: $(cat "$TEST_DIR/out")"
expect_exit 0 "show --json" pc --json show "$a"
check_eq "$(jq -r .state "$TEST_DIR/out")" warm "show --json: state"
# probe: the warm disk's warm places again (its job probed it cold before).
expect_exit 4 "probe over TCP without the token" "$ctl" --url "$API" probe "$a"
expect_exit 0 "probe again after the prefill" tok probe "$a"
grep -q "^  cold/warm  [0-9.]*x" "$TEST_DIR/out" || fail "probe: $(cat "$TEST_DIR/out")"
check_ge "$(tok --json probe "$a" | jq .penalty_ratio)" 2 "probe --json: cold over warm"
# The failing disk's bad sector (at 32 MiB) is one of the probe's places too.
expect_exit 1 "probe a disk with a bad sector" tok probe "$(dev_of bad)"
grep -q "write at offset $((32 * MiB))" "$TEST_DIR/err" || fail "$(cat "$TEST_DIR/err")"
pass "the probe's error: $(cat "$TEST_DIR/err")"
expect_exit 5 "show an unknown disk" pc show no-such-disk
expect_exit 6 "resume a warm disk" tok resume "$a"
expect_exit 0 "pause" tok pause "$(dev_of slow)"
check_eq "$(cat "$TEST_DIR/out")" "$(basename "$(dev_of slow)"): paused" "what pause prints"
expect_exit 0 "cancel" tok cancel "$(dev_of slow)"
check_eq "$(cat "$TEST_DIR/out")" "$(basename "$(dev_of slow)"): cancelled" "what cancel prints"

expect_exit 0 "set rate" tok set rate 100MiB/s
grep -q "^total rate: *100.0 MiB/s" "$TEST_DIR/out" || fail "$(cat "$TEST_DIR/out")"
check_eq "$(pc --json settings | jq .total_rate_bytes_per_s)" $((100 * MiB)) "total rate after set"
expect_exit 2 "set max-parallel 0" tok set max-parallel 0
expect_exit 6 "set max-parallel 64: the jobs' buffers over the budget" tok set max-parallel 64
grep -q "over the 256.0 MiB budget" "$TEST_DIR/err" || fail "set max-parallel 64 says: $(cat "$TEST_DIR/err")"
expect_exit 2 "set rate beyond what the daemon takes" tok set rate 2PiB/s
expect_exit 2 "an option of another command" pc status --timeout 3s
expect_exit 2 "an unknown command" pc frobnicate
expect_exit 3 "a daemon that is not running" "$ctl" --socket "$TEST_DIR/none.sock" status
grep -q "cannot connect to prewarmd at unix:$TEST_DIR/none.sock: is it running?" "$TEST_DIR/err" ||
    fail "$(cat "$TEST_DIR/err")"

# Colours: on a terminal (script gives one), not with NO_COLOR, not into a pipe.
on_tty() { script -qec "$*" /dev/null; }
on_tty "env -u NO_COLOR $ctl --socket $API_SOCKET status" >"$TEST_DIR/tty"
grep -q $'\033\\[32mwarm' "$TEST_DIR/tty" || fail "no colour on a terminal: $(cat -v "$TEST_DIR/tty")"
on_tty "env NO_COLOR=1 $ctl --socket $API_SOCKET status" >"$TEST_DIR/tty"
if grep -q $'\033' "$TEST_DIR/tty"; then fail "colours despite NO_COLOR: $(cat -v "$TEST_DIR/tty")"; fi
if pc status | grep -q $'\033'; then fail "colours into a pipe"; fi
pass "colours on a terminal only, never with NO_COLOR"

# watch: redrawn in place (cursor up, lines cleared), the cursor back after Ctrl-C.
on_tty "timeout --preserve-status -s INT 4 $ctl --socket $API_SOCKET watch --interval 200ms" \
    >"$TEST_DIR/watch" || fail "watch did not exit 0 on Ctrl-C"
# Other tests' disks come and go beside this one: any cursor-up counts.
grep -Eq $'\033\\[[0-9]+A' "$TEST_DIR/watch" || fail "watch did not redraw in place: $(cat -v "$TEST_DIR/watch" | head)"
check_eq "$(tail -c 12 "$TEST_DIR/watch" | grep -c $'\033\\[?25h')" 1 "the cursor shown again at the end"
if grep -q $'\033\\[2J' "$TEST_DIR/watch"; then fail "watch clears the screen (flicker)"; fi
pass "watch redraws without clearing the screen and exits cleanly on Ctrl-C"

pc completion bash >"$TEST_DIR/completion"
bash -n "$TEST_DIR/completion" || fail "the completion script is not valid bash"
check_eq "$(pc complete-disks | grep -cx "$a")" 1 "$a among the completions"
complete_words() { # WORDS...: what the completion offers for the last word
    # shellcheck disable=SC1091
    (source "$TEST_DIR/completion" && PATH=$PREWARMD_BIN:$PATH && COMP_WORDS=("$@") &&
        COMP_CWORD=$(($# - 1)) && _prewarmctl && echo "${COMPREPLY[*]}")
}
check_eq "$(complete_words prewarmctl st)" "status start" "completion of a command"
check_eq "$(complete_words prewarmctl set auto "")" "blank never" "completion of a setting's value"
check_eq "$(complete_words prewarmctl --socket "$API_SOCKET" show "$a")" "$a" "completion of a disk name"
