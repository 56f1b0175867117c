# Faults injected through the control file surface through the loop device with
# the requested errno, at the requested offset; bad commands are refused.
source "$(dirname "$0")/lib.sh"
require_devices

MiB=$((1024 * 1024))
sim_up --disk xvdb=64MiB
dev=$(dev_of xvdb)

control "fail read xvdb range=3MiB+4KiB"
out=$(dd if="$dev" of=/dev/null bs=4k iflag=direct 2>&1) && fail "read past an EIO succeeded"
[[ $out == *"Input/output error"* ]] || fail "read error: $out"
[[ $out == *"768+0 records in"* ]] || fail "the EIO is not at 3 MiB: $out"
pass "EIO on read at exactly 3 MiB"

control clear
control "fail write xvdb after=1MiB"
out=$(dd if=/dev/zero of="$dev" bs=4k count=1024 oflag=direct 2>&1) && fail "write after 1 MiB succeeded"
[[ $out == *"256+0 records out"* && $out == *"Input/output error"* ]] || fail "write error: $out"
pass "EIO on write after 1 MiB"
check_ge "$(stat_of xvdb faults_injected)" 2 "faults injected"

control clear
control "capacity 4MiB"
dd if=/dev/zero of="$dev" bs=1M count=1 seek=8 oflag=direct status=none # a second block
out=$(dd if=/dev/zero of="$dev" bs=1M count=1 seek=20 oflag=direct 2>&1) && fail "write beyond capacity succeeded"
[[ $out == *"No space left on device"* ]] || fail "full backend: $out"
pass "ENOSPC when the backend is full"
dd if=/dev/zero of="$dev" bs=1M count=1 seek=9 oflag=direct status=none ||
    fail "a write into an allocated block failed on a full backend"
pass "allocated blocks stay writable on a full backend"
control "capacity unlimited"

control "vanish xvdb"
[[ ! -e $SIM/mnt/xvdb ]] || fail "a vanished disk is still listed"
out=$(dd if="$dev" of=/dev/null bs=4k count=1 iflag=direct 2>&1) && fail "read of a vanished disk succeeded"
[[ $out == *"No such device"* ]] || fail "vanished disk: $out"
pass "a vanished disk fails with ENODEV"
control "appear xvdb"
dd if="$dev" of=/dev/null bs=4k count=1 iflag=direct status=none || fail "read after appear"
pass "it works again after appear"

control "delay read xvdb 300ms"
start=$(date +%s%N)
dd if="$dev" of=/dev/null bs=4k count=1 iflag=direct status=none
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
check_ge "$elapsed_ms" 300 "milliseconds taken by a read delayed 300 ms"
control clear

if printf 'fail write nosuchdisk\n' >"$SIM/mnt/.control" 2>/dev/null; then
    fail "a command for an unknown disk was accepted"
fi
if printf 'explode xvdb\n' >"$SIM/mnt/.control" 2>/dev/null; then
    fail "an unknown command was accepted"
fi
check_eq "$(stat_of xvdb fault_rules)" 0 "rules left by refused commands"
