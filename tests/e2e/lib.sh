# Sourced by every end-to-end test: preconditions, a private simulator, cleanup of
# everything the test made (also when it fails), and checks that say what they saw.
set -euo pipefail

: "${PREWARMD_BIN:?set by ctest to the bin directory of the build}"
: "${PREWARMD_SRC:?set by ctest: the source tree}"
export COWSIM=$PREWARMD_BIN/cowsim
simdisk=$PREWARMD_SRC/scripts/simdisk

# A precondition this machine lacks: skipped only where skipping is allowed.
cannot_run() {
    if [[ ${PREWARMD_ALLOW_SKIP:-0} == 1 ]]; then
        echo "SKIP: $*"
        exit 77
    fi
    echo "FAIL: cannot run here: $* (PREWARMD_ALLOW_SKIP=1 skips instead)" >&2
    exit 1
}

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

pass() { echo "ok: $*"; }

check_eq() { # ACTUAL EXPECTED WHAT
    [[ $1 == "$2" ]] || fail "$3: expected $2, got $1"
    pass "$3 ($1)"
}

check_ge() { # ACTUAL MINIMUM WHAT
    awk -v a="$1" -v m="$2" 'BEGIN { exit !(a >= m) }' || fail "$3: expected at least $2, got $1"
    pass "$3 ($1 >= $2)"
}

check_le() { # ACTUAL MAXIMUM WHAT
    awk -v a="$1" -v m="$2" 'BEGIN { exit !(a <= m) }' || fail "$3: expected at most $2, got $1"
    pass "$3 ($1 <= $2)"
}

require_devices() {
    [[ $(id -u) == 0 ]] || cannot_run "needs root for loop devices and FUSE"
    [[ -c /dev/fuse ]] || cannot_run "no /dev/fuse"
    [[ -c /dev/loop-control ]] || cannot_run "no /dev/loop-control (loop module)"
    local tool
    for tool in losetup jq dd cmp blockdev; do
        command -v "$tool" >/dev/null || cannot_run "no $tool"
    done
    [[ -x $COWSIM ]] || fail "no cowsim at $COWSIM"
}

TEST_DIR=$(mktemp -d /var/tmp/prewarmd-e2e.XXXXXX)
SIM=$TEST_DIR/sim

# What a test made beyond its simulator, undone in reverse order at cleanup.
undo=()
on_cleanup() { undo=("$*" "${undo[@]+"${undo[@]}"}"); }

cleanup() {
    local rc=$? step
    trap - EXIT INT TERM
    for step in "${undo[@]+"${undo[@]}"}"; do
        eval "$step" >&2 || rc=1
    done
    "$simdisk" down --state "$SIM" >&2 || rc=1
    rm -rf "$TEST_DIR"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# Starts a simulator for this test; arguments go to `simdisk up`.
sim_up() { "$simdisk" up --state "$SIM" "$@" >"$TEST_DIR/devices"; }
sim_down() { "$simdisk" down --state "$SIM"; }
dev_of() { awk -v n="$1" '$1 == n { print $2 }' "$TEST_DIR/devices"; }
# A match rule for this test's simulated disks only, by their id (the backing
# file's path), attached now or later: tests run side by side, and a daemon must
# not warm another test's disks.
sim_rule() { printf 'id:loop-%s_*' "$(realpath "$TEST_DIR" | tr -c 'A-Za-z0-9._\n-' '_')"; }
# The start of the daemon's id for this test's cowsim disk NAME (the ids of another
# test's disk of the same name differ in the test's directory).
sim_id() { printf 'loop-%s_sim_mnt_%s-' "$(realpath "$TEST_DIR" | tr -c 'A-Za-z0-9._\n-' '_')" "$1"; }
sim_match() { printf '["%s"]\n' "$(sim_rule)"; }
stat_of() { jq -r --arg d "$1" ".disks[\$d].$2" "$SIM/mnt/.stats"; }
control() { printf '%s\n' "$*" >"$SIM/mnt/.control"; }

prewarmd=$PREWARMD_BIN/prewarmd

# Writes LEN bytes of random data at OFFSET (bytes, multiples of 4 KiB) of DEV.
put_data() { # DEV OFFSET LEN
    head -c "$3" /dev/urandom | dd of="$1" bs=4k seek=$(($2 / 4096)) oflag=direct status=none
}

sha() { sha256sum <"$1" | cut -d' ' -f1; }

# The bytes available in the filesystem at MOUNT, as statfs says now.
avail() { stat -f -c '%a %S' "$1" | awk '{ print $1 * $2 }'; }

# The same, once the frees in flight have landed: a removed file's blocks come
# back at ext4's journal commit, and at xfs's deferred inode inactivation, which
# statfs only nudges (so a plain read may be short by a whole file). A freeze
# syncs the filesystem and drains xfs's inactivation queue on its way in. To
# compare with a figure read the same way, while nothing else writes there.
settled_avail() { # MOUNT
    sync -f "$1"
    fsfreeze --freeze "$1" || fail "fsfreeze --freeze $1"
    fsfreeze --unfreeze "$1" || fail "fsfreeze --unfreeze $1: the filesystem stays frozen"
    avail "$1"
}

# Until a filesystem job running on MOUNT has claimed 64 MiB of the BEFORE bytes
# available (10 s at most): it is mid-job then.
wait_for_claim() { # MOUNT BEFORE
    local _
    for _ in $(seq 100); do
        (($(avail "$1") < $2 - (64 << 20))) && return 0
        sleep 0.1
    done
    fail "$1: the job claimed nothing in 10 s ($(avail "$1") of $2 available)"
}

# Waits until process PID runs NAME (5 s at most). `NAME ... <FILE &` has FILE open
# by then: the shell opens it before the exec.
wait_exec() { # PID NAME
    local _
    for _ in $(seq 50); do
        [[ $(cat "/proc/$1/comm" 2>/dev/null) == "$2" ]] && return 0
        sleep 0.1
    done
    fail "process $1 is not running $2 after 5 s"
}

# Runs a command, keeping its exit status: `run_status CMD...; echo $status`.
run_status() {
    status=0
    "$@" || status=$?
}

# A loop device over a new sparse file of SIZE, in $LOOP; extra arguments go to
# losetup. Detached at cleanup, by its backing file, not its name. (Not to be run
# in $(...): the cleanup it registers would stay in the subshell.)
loop_file() { # NAME SIZE [LOSETUP ARGS...]
    local name=$1 size=$2
    shift 2
    truncate -s "$size" "$TEST_DIR/$name.raw"
    LOOP=$(losetup --find --show "$@" "$TEST_DIR/$name.raw")
    on_cleanup "detach_if_ours $LOOP $TEST_DIR/$name.raw"
}

detach_if_ours() { # DEV FILE
    local backing=/sys/block/$(basename "$1")/loop/backing_file
    [[ -r $backing && $(cat "$backing") == "$2" ]] || return 0
    partx -d "$1" 2>/dev/null || true
    losetup -d "$1"
}

mount_for_test() { # DEV DIR
    mkdir -p "$2"
    mount "$1" "$2"
    on_cleanup "umount $2"
}

# udevd, started for this test when none runs, and stopped again at cleanup.
require_udevd() {
    pgrep -x systemd-udevd >/dev/null && return 0
    [[ -x /lib/systemd/systemd-udevd ]] || cannot_run "no /lib/systemd/systemd-udevd (package udev)"
    # In the foreground, as our own child: its pid is certain, not a pgrep's guess.
    /lib/systemd/systemd-udevd >/dev/null 2>&1 &
    local pid=$!
    on_cleanup "kill $pid; wait $pid 2>/dev/null || true"
    local _
    for _ in $(seq 50); do
        udevadm control --ping 2>/dev/null && return 0
        kill -0 "$pid" 2>/dev/null || cannot_run "systemd-udevd does not start"
        sleep 0.1
    done
    cannot_run "systemd-udevd does not answer"
}

# The daemon, on this test's state directory, with CONFIG (TOML text) and any extra
# arguments; logging to $DAEMON_LOG; stopped with SIGTERM at cleanup.
# CONFIG as the daemon gets it: unless it has its own, the API gets this test's port
# and socket (api_config) and D-Bus is off, so a test never meets the machine's own
# bus or port 7433; and adaptive mode watches this test's disks only, so other
# tests' busy disks never slow it down; and jobs write every byte (strategy =
# "full") unless the config names a strategy: cowsim's disks are whole-block, where
# "auto" would warm them sparsely in a blink, and a test of a job's life needs one
# that lasts. For a config rewritten before a reload.
daemon_config() { # CONFIG
    local config=$1 line
    for line in "adaptive_watch = [\"$(sim_rule)\"]" 'strategy = "full"'; do
        [[ $line == adaptive* && $config == *adaptive* ]] && continue
        [[ $line == strategy* && $config == *strategy* ]] && continue
        if [[ $config == *"[prefill]"* ]]; then
            config=${config/"[prefill]"/"[prefill]"$'\n'$line}
        else
            config+=$'\n[prefill]\n'$line
        fi
    done
    [[ $config == *"[api]"* ]] || config+=$'\n'$API_CONFIG
    [[ $config == *"[dbus]"* ]] || config+=$'\n[dbus]\nenabled = false'
    printf '%s\n' "$config"
}

start_daemon() { # CONFIG [ARGS...]
    local config=$1
    shift
    [[ -n ${API_CONFIG:-} ]] || api_config
    daemon_config "$config" >"$TEST_DIR/prewarmd.toml"
    DAEMON_LOG=$TEST_DIR/daemon.log
    "$prewarmd" run --config "$TEST_DIR/prewarmd.toml" --state-dir "$TEST_DIR/state" "$@" \
        >>"$DAEMON_LOG" 2>&1 &
    DAEMON_PID=$!
    on_cleanup "stop_daemon"
}

# Stops it; a line of the daemon's saying BUG (a state change its table forbids)
# fails the test.
stop_daemon() {
    if [[ -n ${DAEMON_PID:-} ]] && kill -0 "$DAEMON_PID" 2>/dev/null; then
        kill -TERM "$DAEMON_PID"
        wait "$DAEMON_PID" || true
    fi
    if [[ -n ${DAEMON_LOG:-} ]] && grep -q "BUG:" "$DAEMON_LOG"; then
        echo "FAIL: the daemon logged a bug: $(grep "BUG:" "$DAEMON_LOG")" >&2
        return 1
    fi
}

# Waits until the daemon's log has a line matching the extended regex PATTERN.
wait_for_log() { # PATTERN [SECONDS]
    wait_for_line "$DAEMON_LOG" "$1" "${2:-20}"
    pass "log: $(grep -Em1 "$1" "$DAEMON_LOG" | cut -d' ' -f3-)"
}

# Waits until FILE has a line matching the extended regex PATTERN; on a time-out,
# the daemon's threads say where they are.
wait_for_line() { # FILE PATTERN [SECONDS]
    local deadline=$((SECONDS + ${3:-20}))
    until grep -Eq "$2" "$1" 2>/dev/null; do
        if ((SECONDS >= deadline)); then
            daemon_stacks
            fail "no line like '$2' in $1 after ${3:-20} s:
$(cat "$1" 2>&1)"
        fi
        sleep 0.1
    done
}

# The running daemon's thread stacks, on standard error (gdb, when there is one).
daemon_stacks() {
    [[ -n ${DAEMON_PID:-} ]] && kill -0 "$DAEMON_PID" 2>/dev/null || return 0
    command -v gdb >/dev/null || { echo "(no gdb: no thread stacks)" >&2; return 0; }
    echo "--- the daemon's threads (pid $DAEMON_PID):" >&2
    timeout 60 gdb -p "$DAEMON_PID" -batch -ex "thread apply all bt 12" 2>/dev/null |
        grep -E '^(Thread|#)' >&2 || true
    echo "---" >&2
}

# A field of the job record of the simulated disk NAME.
record_of() { # NAME FIELD
    local file
    file=$(ls "$TEST_DIR/state/jobs/"*"_mnt_$1-"*.json 2>/dev/null | head -1)
    [[ -n $file ]] || { echo ""; return; }
    sed 1d "$file" | jq -r ".$2"
}

# A log pattern for the simulated disk NAME by its identity, not its kernel name
# (loop numbers are reused): "..._mnt_NAME-SIZE (loopN)".
disk_pattern() { echo "_mnt_$1-[0-9]+ \(loop[0-9]+\)"; }

# Chooses the API of a daemon to start: a port of this test's own and a socket in its
# directory; sets $API, $API_SOCKET and $API_CONFIG, the [api] section to append to the
# configuration (never call it in "$(...)").
# A TCP port for a listener of the test's own, drawn below the kernel's range of
# ephemeral ports (ip_local_port_range): drawn inside it, a port was once held by
# another test's outgoing connection, and prometheus could not bind it. Two below
# the range's start, so that PORT + 1 is below it too.
test_port() {
    local low _
    read -r low _ </proc/sys/net/ipv4/ip_local_port_range
    ((low > 12000)) || low=32768
    echo $((10000 + RANDOM % (low - 10002)))
}

api_config() {
    API_PORT=$(test_port)
    API=http://127.0.0.1:$API_PORT
    API_SOCKET=$TEST_DIR/api.sock
    API_CONFIG=$(printf '[api]\nlisten = ["127.0.0.1:%s"]\nsocket = "%s"\n' "$API_PORT" "$API_SOCKET")
}

# A private D-Bus daemon for this test, its address in $BUS: with prewarmd's bus
# policy (systemd/org.prewarmd.Prewarmd1.conf), or with "open" none (everyone may
# send anything: for the daemon's own checks). Its socket is in a directory others
# may enter, so a test can call as another user.
start_bus() { # [open]
    command -v dbus-daemon >/dev/null || cannot_run "no dbus-daemon (package dbus-daemon)"
    local dir include=""
    dir=$(mktemp -d /tmp/prewarmd-bus.XXXXXX)
    chmod 755 "$dir"
    on_cleanup "rm -rf $dir"
    [[ ${1:-} == open ]] || include="<include>$PREWARMD_SRC/systemd/org.prewarmd.Prewarmd1.conf</include>"
    cat >"$dir/bus.conf" <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <listen>unix:path=$dir/socket</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
  </policy>
  $include
</busconfig>
CONF
    dbus-daemon --config-file="$dir/bus.conf" --nofork --nopidfile >"$dir/log" 2>&1 &
    local pid=$!
    on_cleanup "kill $pid; wait $pid 2>/dev/null || true"
    BUS=unix:path=$dir/socket
    local _
    for _ in $(seq 50); do
        [[ -S $dir/socket ]] && return 0
        kill -0 "$pid" 2>/dev/null || fail "dbus-daemon did not start: $(cat "$dir/log")"
        sleep 0.1
    done
    fail "dbus-daemon made no socket"
}

# The stand-ins for systemd and logind (tests/tools/fake_system_bus.cc) on $BUS, with
# ARGS; commands go to them with `fake_bus COMMAND`, what they saw is in $FAKE_OUT.
start_fake_system_bus() { # [ARGS...]
    local fifo
    fifo=$(mktemp -u "$TEST_DIR/fake.XXXXXX")
    mkfifo "$fifo"
    FAKE_OUT=$fifo.out
    "$PREWARMD_BIN/fake_system_bus" "$BUS" "$@" <"$fifo" >"$FAKE_OUT" 2>&1 &
    local pid=$!
    exec 7>"$fifo"
    on_cleanup "exec 7>&-; kill $pid 2>/dev/null; wait $pid 2>/dev/null || true"
    wait_for_line "$FAKE_OUT" "^ready$"
}
fake_bus() {
    local before _
    before=$(grep -c "^done $*\$" "$FAKE_OUT" || true)
    printf '%s\n' "$*" >&7
    for _ in $(seq 100); do
        (($(grep -c "^done $*\$" "$FAKE_OUT" || true) > before)) && return 0
        sleep 0.1
    done
    fail "the stand-ins did not take '$*': $(cat "$FAKE_OUT")"
}

# busctl on the test bus, for prewarmd's objects.
pbus() { busctl --address="$BUS" "$@"; }
manager=(org.prewarmd.Prewarmd1 /org/prewarmd/Prewarmd1 org.prewarmd.Prewarmd1.Manager)

wait_for_api() {
    for _ in $(seq 50); do
        curl -sf --max-time 5 "$API/readyz" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    fail "the API does not answer: $(tail -5 "$DAEMON_LOG")"
}

# The token the daemon made in its state directory at its first start: changes over
# TCP need it (docs/security.md).
api_token() { cat "$TEST_DIR/state/api.token"; }

# One request, recorded in $TEST_DIR/exchanges.jsonl for the contract check; prints
# the status. With $TOKEN set, it goes as the bearer token. Extra arguments go to curl.
exchange() { # METHOD PATH [CURL ARGS...]
    local method=$1 path=$2 meta
    local -a auth=()
    shift 2
    [[ -n ${TOKEN:-} ]] && auth=(-H "Authorization: Bearer $TOKEN")
    meta=$(curl -s -o "$TEST_DIR/body" -w '%{http_code} %{content_type}' -X "$method" \
        "${auth[@]+"${auth[@]}"}" "$@" "$API$path")
    jq -cn --arg m "$method" --arg p "$path" --argjson s "${meta%% *}" --arg c "${meta#* }" \
        --rawfile b "$TEST_DIR/body" '{method: $m, path: $p, status: $s, content_type: $c, body: $b}' \
        >>"$TEST_DIR/exchanges.jsonl"
    echo "${meta%% *}"
}
