# The commands an administrator runs on a newly attached disk succeed the first
# time, at any moment after the attach, with the daemon at its defaults: 20 disks,
# 20 commands (mkfs.ext4, mkfs.xfs, pvcreate, wipefs, sgdisk, mount, cryptsetup
# luksFormat), each at its own moment in the first 75 s: during the attach grace,
# and while the disk's automatic job runs. What they made is intact afterwards.
# Two settings differ from the defaults: max_parallel = 20, so that every disk's
# job runs when its command comes (at 1, 19 of them would wait in the queue), and
# queue_depth = 3, so that 20 jobs' buffers fit the daemon's 256 MiB budget.
source "$(dirname "$0")/lib.sh"
require_devices
require_udevd
for tool in mkfs.ext4 mkfs.xfs pvcreate wipefs sgdisk cryptsetup e2fsck xfs_repair; do
    command -v "$tool" >/dev/null || cannot_run "no $tool"
done

start_daemon '[discovery]
match = '"$(sim_match)"'
[prefill]
max_parallel = 20
queue_depth = 3'
wait_for_log "running: state in"

commands=(mkfs.ext4 mkfs.xfs pvcreate wipefs sgdisk mount luksFormat)
disks=()
for i in $(seq -w 1 20); do disks+=(--disk "u$i=1GiB"); done
sim_up "${disks[@]}" # attached now, with the daemon watching
pass "20 disks attached"

# One administrator's command on DEV, as they would type it (LVM's kept to DEV:
# its scan opens every block device, the other tests' disks too).
run_command() { # KIND DEV
    case $1 in
    mkfs.ext4) mkfs.ext4 -q "$2" ;;
    mkfs.xfs) mkfs.xfs -q "$2" ;;
    pvcreate) pvcreate -q --devices "$2" "$2" ;;
    wipefs) wipefs -a "$2" ;;
    sgdisk) sgdisk -n 1:0:0 "$2" ;;
    mount) mkfs.ext4 -q "$2" && mount "$2" "$TEST_DIR/mnt-$(basename "$2")" ;;
    luksFormat)
        cryptsetup luksFormat --batch-mode --pbkdf pbkdf2 --iter-time 10 \
            --key-file "$TEST_DIR/key" "$2"
        ;;
    esac </dev/null
}
head -c 32 /dev/urandom >"$TEST_DIR/key"

declare -A kind_of
pids=()
for i in $(seq 0 19); do
    name=${disks[$((2 * i + 1))]%%=*}
    dev=$(dev_of "$name")
    kind=${commands[$((i % ${#commands[@]}))]}
    kind_of[$name]=$kind
    mkdir -p "$TEST_DIR/mnt-$(basename "$dev")"
    # Moments spread over 0-75 s after the attach, each with its own jitter.
    delay=$(awk -v i="$i" -v r="$RANDOM" 'BEGIN { printf "%.2f", i * 3.6 + r % 360 / 100 }')
    (
        sleep "$delay"
        status=0
        run_command "$kind" "$dev" >"$TEST_DIR/$name.out" 2>&1 || status=$?
        echo "$status $delay" >"$TEST_DIR/$name.status"
    ) &
    pids+=($!)
done
on_cleanup 'for m in '"$TEST_DIR"'/mnt-*; do mountpoint -q "$m" && umount "$m"; done; true'
wait "${pids[@]}"

failed=0
for name in "${!kind_of[@]}"; do
    read -r status delay <"$TEST_DIR/$name.status"
    if [[ $status != 0 ]]; then
        echo "FAIL: ${kind_of[$name]} on $name at $delay s: exit $status: $(cat "$TEST_DIR/$name.out")" >&2
        failed=$((failed + 1))
    fi
done
check_eq "$failed" 0 "commands that failed, of 20"

stepped=$(grep -cE "running -> waiting.*stepped aside" "$DAEMON_LOG" || true)
in_grace=$(grep -cE "in use during the attach grace" "$DAEMON_LOG" || true)
check_ge "$stepped" 1 "jobs that stepped aside for a command"
check_ge "$in_grace" 1 "disks a command met in their attach grace"
grep -E "stepped aside" "$DAEMON_LOG" | sed -n '1,3s/^/  /p'
grep -qE "stepped aside: .*\(pid [0-9]+\)" "$DAEMON_LOG" || fail "a step aside does not say who came"
pass "a step aside names who came"

# What the commands made is intact, judged once the daemon has let go.
stop_daemon
for m in "$TEST_DIR"/mnt-*; do mountpoint -q "$m" && umount "$m"; done
for name in "${!kind_of[@]}"; do
    dev=$(dev_of "$name")
    case ${kind_of[$name]} in
    mkfs.ext4 | mount) e2fsck -fn "$dev" >"$TEST_DIR/$name.check" 2>&1 ;;
    mkfs.xfs) xfs_repair -n "$dev" >"$TEST_DIR/$name.check" 2>&1 ;;
    pvcreate) pvs --devices "$dev" "$dev" >"$TEST_DIR/$name.check" 2>&1 ;;
    wipefs) true ;;
    sgdisk) sgdisk -v "$dev" >"$TEST_DIR/$name.check" 2>&1 ;;
    luksFormat) cryptsetup isLuks "$dev" >"$TEST_DIR/$name.check" 2>&1 ;;
    esac || fail "${kind_of[$name]} on $name: what it made is not intact: $(cat "$TEST_DIR/$name.check")"
done
pass "every filesystem, label and table the commands made checks clean"
