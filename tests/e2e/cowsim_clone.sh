# A clone reads its parent through unallocated blocks and copies a block up on its
# first write; the parent image is never written.
source "$(dirname "$0")/lib.sh"
require_devices

MiB=$((1024 * 1024))
head -c $((24 * MiB)) /dev/urandom >"$TEST_DIR/parent.img"
parent_sum=$(sha256sum <"$TEST_DIR/parent.img")
sim_up --disk "clone=32MiB,parent=$TEST_DIR/parent.img"
dev=$(dev_of clone)

cmp -n $((24 * MiB)) "$dev" "$TEST_DIR/parent.img" || fail "the clone does not read its parent"
pass "the clone reads its parent"
cmp -n $((8 * MiB)) -i $((24 * MiB)):0 "$dev" /dev/zero || fail "beyond the parent's end"
pass "beyond the parent's end it reads zeros"

cp "$TEST_DIR/parent.img" "$TEST_DIR/expected.img"
truncate -s $((32 * MiB)) "$TEST_DIR/expected.img"
head -c 1024 /dev/urandom >"$TEST_DIR/data"
dd if="$TEST_DIR/data" of="$TEST_DIR/expected.img" bs=1k seek=3000 conv=notrunc status=none
dd if="$TEST_DIR/data" of="$dev" bs=1k seek=3000 oflag=direct status=none

check_eq "$(stat_of clone first_writes)" 1 "copy-ups"
cmp -n $((32 * MiB)) "$dev" "$TEST_DIR/expected.img" || fail "content after the copy-up"
pass "after the copy-up the clone reads parent + new data"
check_eq "$(sha256sum <"$TEST_DIR/parent.img")" "$parent_sum" "the parent image is unchanged"
