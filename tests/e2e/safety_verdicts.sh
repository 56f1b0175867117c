# The safety verdicts on real loop devices, made with the real tools: a blank disk
# is eligible; file systems, partition tables, swap, LUKS, LVM, a RAID superblock
# or a GPT backup header at the very end, a partition with a file system on an
# otherwise blank disk: needs-request; mounted, read-only, active swap or held open
# by another process: refused.
source "$(dirname "$0")/lib.sh"
require_devices
for tool in mkfs.ext4 mkfs.xfs mkfs.vfat mkswap sfdisk partx cryptsetup pvcreate setpriv; do
    command -v "$tool" >/dev/null || cannot_run "no $tool"
done

MiB=$((1024 * 1024))
verdict() { # DEV: the JSON report of that disk
    # A udevd that other tests started handles the events of each mkfs, and its
    # helpers may have the disk open meanwhile: let it finish first.
    if pgrep -x systemd-udevd >/dev/null; then udevadm settle --timeout 10 || true; fi
    "$prewarmd" inspect --json --match 'name:loop*' "$1" | jq '.[0]'
}
expect() { # WHAT DEV VERDICT [REASON TEXT]
    local what=$1 dev=$2 want=$3 text=${4:-} report
    report=$(verdict "$dev")
    check_eq "$(jq -r .verdict <<<"$report")" "$want" "$what: verdict ($(jq -c .reasons <<<"$report"))"
    if [[ -n $text ]]; then
        jq -e --arg t "$text" '[.reasons[] | select(contains($t))] | length > 0' <<<"$report" \
            >/dev/null || fail "$what: no reason mentions '$text': $(jq -c .reasons <<<"$report")"
        pass "$what: a reason says '$text'"
    fi
}

loop_file blank 64MiB
dev=$LOOP
expect "blank disk" "$dev" eligible "blank: no signature, not in use"

loop_file ext4 64MiB
dev=$LOOP
mkfs.ext4 -q -U 11111111-2222-3333-4444-555555555555 "$dev"
expect "ext4" "$dev" needs-request "has ext4 filesystem (UUID 11111111-2222-3333-4444-555555555555)"

loop_file xfs 512MiB # mkfs.xfs wants 300 MiB at least
dev=$LOOP
mkfs.xfs -q "$dev"
expect "xfs" "$dev" needs-request "has xfs filesystem"

loop_file vfat 64MiB
dev=$LOOP
mkfs.vfat -n DATA "$dev" >/dev/null
expect "vfat" "$dev" needs-request "label DATA"

loop_file swap 64MiB
dev=$LOOP
mkswap -q "$dev"
expect "swap signature" "$dev" needs-request "has swap"

loop_file gpt 64MiB
dev=$LOOP
printf 'label: gpt\nsize=16MiB\n' | sfdisk -q --no-tell-kernel "$dev"
expect "GPT" "$dev" needs-request "a gpt partition table"

loop_file mbr 64MiB
dev=$LOOP
printf 'label: dos\nsize=16MiB\n' | sfdisk -q --no-tell-kernel "$dev"
expect "MBR" "$dev" needs-request "a dos partition table"

loop_file luks 64MiB
dev=$LOOP
printf pass | cryptsetup luksFormat -q --pbkdf pbkdf2 --pbkdf-force-iterations 1000 "$dev" - 2>/dev/null
expect "LUKS" "$dev" needs-request "has crypto_LUKS"

loop_file lvm 64MiB
dev=$LOOP
# --devices: LVM scans every block device otherwise, the other tests' too.
pvcreate -qq --devices "$dev" "$dev" 2>/dev/null
expect "LVM" "$dev" needs-request "has LVM2_member"

# A GPT whose start was wiped (protective MBR and primary header): the backup remains.
loop_file gpt-backup 64MiB
dev=$LOOP
printf 'label: gpt\nsize=16MiB\n' | sfdisk -q --no-tell-kernel "$dev"
dd if=/dev/zero of="$dev" bs=1M count=1 conv=notrunc status=none
expect "GPT backup header only" "$dev" needs-request "a backup header"

# An md 0.90 superblock: it lives at the end of the device, 64 KiB-aligned.
loop_file raid-end 64MiB
dev=$LOOP
printf '\xfc\x4e\x2b\xa9\x00\x00\x00\x00\x5a\x00\x00\x00' |
    dd of="$dev" bs=1 seek=$((64 * MiB - 65536)) conv=notrunc status=none
expect "RAID superblock at the end" "$dev" needs-request "linux_raid_member"

# A partition with a file system, on a disk otherwise blank.
loop_file part 64MiB
dev=$LOOP
printf 'label: dos\nstart=2048, size=32MiB\n' | sfdisk -q --no-tell-kernel "$dev"
partx -a "$dev"
mkfs.ext4 -q "${dev}p1"
expect "a partition with ext4" "$dev" needs-request "ext4 filesystem (UUID"
expect "a partition with ext4" "$dev" needs-request "in partition 1"

loop_file mounted 64MiB
dev=$LOOP
mkfs.ext4 -q "$dev"
mount_for_test "$dev" "$TEST_DIR/mnt-whole"
expect "a mounted disk" "$dev" refused "mounted at $TEST_DIR/mnt-whole"

loop_file part-mounted 64MiB
dev=$LOOP
printf 'label: dos\nstart=2048, size=32MiB\n' | sfdisk -q --no-tell-kernel "$dev"
partx -a "$dev"
mkfs.ext4 -q "${dev}p1"
mount_for_test "${dev}p1" "$TEST_DIR/mnt-part"
expect "a disk whose partition is mounted" "$dev" refused \
    "partition $(basename "$dev")p1 mounted at $TEST_DIR/mnt-part"

loop_file ro 64MiB --read-only
dev=$LOOP
expect "a read-only disk" "$dev" refused "read-only"

loop_file held 64MiB
dev=$LOOP
sleep 60 <"$dev" &
holder=$!
on_cleanup "kill $holder"
wait_exec "$holder" sleep
expect "a disk held open" "$dev" refused "open in another process: sleep (pid $holder)"

# Held by another user's process: seen with the unit's capabilities; without them
# the process's open files cannot be read, and that is no proof the disk is free.
loop_file held-by-nobody 64MiB
dev=$LOOP
setpriv --reuid=65534 --regid=65534 --clear-groups sleep 60 <"$dev" &
holder=$!
on_cleanup "kill $holder"
wait_exec "$holder" sleep
report=$(setpriv --bounding-set=-all,+sys_ptrace,+dac_read_search "$prewarmd" inspect --json --match 'name:loop*' "$dev" | jq '.[0]')
check_eq "$(jq -r .verdict <<<"$report")" refused "held by nobody, with CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH: verdict"
jq -e --arg t "open in another process: sleep (pid $holder)" '.reasons | index($t)' <<<"$report" >/dev/null ||
    fail "held by nobody: $(jq -c .reasons <<<"$report")"
report=$(setpriv --bounding-set=-all "$prewarmd" inspect --json --match 'name:loop*' "$dev" | jq '.[0]')
check_eq "$(jq -r .verdict <<<"$report")" refused "held by nobody, seen with no capabilities: verdict"
jq -e '[.reasons[] | select(test("its open files cannot be read"))] | length > 0' <<<"$report" >/dev/null ||
    fail "with no capabilities: $(jq -c .reasons <<<"$report")"
pass "a process whose open files cannot be read counts as holding the disk"

loop_file swapping 64MiB
dev=$LOOP
mkswap -q "$dev"
if swapon "$dev" 2>/dev/null; then
    on_cleanup "swapoff $dev"
    expect "active swap" "$dev" refused "is active swap"
    report=$(verdict "$dev")
    check_eq "$(jq -r .matched <<<"$report")" false "active swap: considered"
else
    echo "note: swapon on a loop device is refused here; the active swap case is not checked"
fi

# The same disk by a partition's name: only whole disks.
# Asked about a partition, it says only whole disks are warmed.
loop_file p2 64MiB
printf 'label: dos\nstart=2048, size=32MiB\n' | sfdisk -q --no-tell-kernel "$LOOP"
partx -a "$LOOP"
report=$("$prewarmd" inspect --json --match 'name:loop*' "${LOOP}p1" | jq '.[0]')
check_eq "$(jq -r .matched <<<"$report")" false "a partition: considered"
check_eq "$(jq -r .match_reason <<<"$report")" "a partition: only whole disks are warmed" \
    "a partition: why not"
