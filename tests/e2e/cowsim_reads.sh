# Unwritten regions read as zeros; written data reads back; disks of any size cost
# nothing until written; 4096-byte sectors and sizes that are not whole blocks work.
source "$(dirname "$0")/lib.sh"
require_devices

MiB=$((1024 * 1024))
sim_up --disk small=64MiB --disk odd=$((20 * MiB + 3 * 512)) --disk big=1TiB
small=$(dev_of small) odd=$(dev_of odd) big=$(dev_of big)

cmp -n $((64 * MiB)) "$small" /dev/zero || fail "a fresh disk does not read as zeros"
pass "a fresh 64 MiB disk reads as zeros"
# At least: where udevd runs, its probe of a new disk reads some too.
check_ge "$(stat_of small hole_bytes_read)" $((64 * MiB)) "bytes served as holes"
check_eq "$(stat_of small backend_bytes_read)" 0 "backend bytes read for holes"

head -c $((1 * MiB)) /dev/urandom >"$TEST_DIR/pattern"
dd if="$TEST_DIR/pattern" of="$small" bs=1M seek=10 oflag=direct status=none
cmp -n $((1 * MiB)) -i 0:$((10 * MiB)) "$TEST_DIR/pattern" "$small" ||
    fail "written data does not read back"
pass "written data reads back"
cmp -n $((10 * MiB)) "$small" /dev/zero || fail "data leaked before the write"
cmp -n $((53 * MiB)) -i $((11 * MiB)):0 "$small" /dev/zero || fail "data leaked after the write"
pass "the rest still reads as zeros"

check_eq "$(blockdev --getsize64 "$odd")" $((20 * MiB + 3 * 512)) "size of a disk that ends mid-block"
dd if="$TEST_DIR/pattern" of="$odd" bs=512 count=3 seek=$((40960)) oflag=direct status=none
cmp -n 1536 -i 0:$((20 * MiB)) "$TEST_DIR/pattern" "$odd" || fail "the short last block"
check_eq "$(stat_of odd allocated_bytes)" 1536 "allocated bytes of the short last block"

check_eq "$(blockdev --getsize64 "$big")" $((1024 * 1024 * MiB)) "size of the 1 TiB disk"
cmp -n $MiB -i $((1024 * 1024 * MiB - MiB)):0 "$big" /dev/zero || fail "end of the 1 TiB disk"
dd if=/dev/zero of="$big" bs=4k count=1 seek=$((200 * 1024 * 1024)) oflag=direct status=none
store_kib=$(du -k "$SIM/store/big.img" | cut -f1)
[[ $store_kib -le 4096 ]] || fail "the 1 TiB store uses $store_kib KiB after one block"
pass "the 1 TiB disk's store uses $store_kib KiB after one write"

sim_down
sim_up --sector-size 4096 --disk s4k=16MiB
s4k=$(dev_of s4k)
check_eq "$(blockdev --getss "$s4k")" 4096 "logical sector size"
dd if="$TEST_DIR/pattern" of="$s4k" bs=4k count=16 seek=3 oflag=direct status=none
cmp -n 65536 -i 0:12288 "$TEST_DIR/pattern" "$s4k" || fail "4096-byte sectors: data"
pass "4096-byte sectors: data reads back"
if dd if=/dev/zero of="$s4k" bs=512 count=1 oflag=direct status=none 2>/dev/null; then
    fail "a 512-byte direct write to a 4096-byte-sector disk succeeded"
fi
pass "512-byte direct writes are refused on 4096-byte sectors"
