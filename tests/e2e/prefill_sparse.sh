# Sparse warming, judged by cowsim's counters: on a whole-block backend that
# allocates on the storage host, `prewarmd prefill` (strategy auto) probes, writes
# one 4 KiB piece per block, proves the middle of the blocks warm, and every block
# is allocated with under 1% of the disk sent over the link; what the disk reads
# back never changes. On a sector-bitmap backend auto chooses full writes, and a
# forced sparse job fails before it writes, saying the middle of the blocks would
# stay cold. Where the
# proof fails on a whole-block backend (cowsim slows exactly the places it times),
# auto writes every byte after all, proven by the warm probe's own places (which
# cowsim does not slow).
source "$(dirname "$0")/lib.sh"
require_devices

sim_up --host-allocation --disk whole=2GiB --disk bitmap=512MiB,bitmap=on --disk forced=512MiB,bitmap=on \
    --disk unproven=512MiB
dev=$(dev_of whole)
put_data "$dev" $((700 << 20)) $((3 << 20)) # data to keep, not block-aligned at its end
before=$(sha "$dev")

run_status "$prewarmd" prefill "$dev" >"$TEST_DIR/whole.out" 2>&1
check_eq "$status" 0 "whole: exit status"
grep -q "sparse: one 4.00 KiB write per 2.00 MiB block" "$TEST_DIR/whole.out" ||
    fail "whole: not sparse: $(cat "$TEST_DIR/whole.out")"
grep -q "^warm: .*" "$TEST_DIR/whole.out" && grep -q "  the middle of the blocks is warm" "$TEST_DIR/whole.out" ||
    fail "whole: no proof: $(cat "$TEST_DIR/whole.out")"
pass "whole: sparse, and proven warm in the middle of the blocks"
check_eq "$(stat_of whole blocks_allocated)" "$(stat_of whole blocks_total)" "whole: blocks allocated"
link=$(stat_of whole link_bytes_written)
check_ge $((2 * 1024 * 1024 * 1024 / 100)) "$link" "whole: 1% of the disk, at least the bytes sent over the link"
check_eq "$(sha "$dev")" "$before" "whole: what the disk reads back"

run_status "$prewarmd" prefill "$(dev_of bitmap)" >"$TEST_DIR/bitmap.out" 2>&1
check_eq "$status" 0 "bitmap: exit status"
grep -q "full writes: the probe found per-sector allocation" "$TEST_DIR/bitmap.out" ||
    fail "bitmap: auto did not choose full writes: $(cat "$TEST_DIR/bitmap.out")"
pass "bitmap: auto chose full writes"
check_ge "$(stat_of bitmap link_bytes_written)" $((512 * 1024 * 1024)) "bitmap: bytes sent (the whole disk)"

run_status "$prewarmd" prefill --strategy sparse "$(dev_of forced)" >"$TEST_DIR/forced.out" 2>&1
check_eq "$status" 1 "forced sparse on a bitmap backend: exit status"
grep -q "sparse writes would leave the middle of the blocks cold" "$TEST_DIR/forced.out" ||
    fail "forced: no reason given: $(cat "$TEST_DIR/forced.out")"
pass "forced sparse on a bitmap backend fails, saying why"
check_ge $((1 << 20)) "$(stat_of forced link_bytes_written)" "forced: 1 MiB, at least the bytes sent (the probe's own; it failed before writing)"

# The proof's places on a 512 MiB disk: 16 strides of 32 MiB, each 16 MiB on and
# half a 2 MiB block into it.
for i in $(seq 0 15); do
    control "delay write unproven 40ms range=$(((i * 32 + 16) * 1024 * 1024 + 1024 * 1024))+4096"
done
run_status "$prewarmd" prefill "$(dev_of unproven)" >"$TEST_DIR/unproven.out" 2>&1
check_eq "$status" 0 "unproven: exit status"
grep -q "the middle of the blocks is still cold after sparse writes .*: full writes after all" \
    "$TEST_DIR/unproven.out" || fail "unproven: no full writes after the failed proof: $(cat "$TEST_DIR/unproven.out")"
pass "unproven: the failed proof led to full writes"
check_ge "$(stat_of unproven link_bytes_written)" $((512 * 1024 * 1024)) "unproven: bytes sent (every byte, after all)"
grep -q "^warm: " "$TEST_DIR/unproven.out" && grep -q "  warm places p50 .* faster than cold" \
    "$TEST_DIR/unproven.out" || fail "unproven: full writes not proven: $(cat "$TEST_DIR/unproven.out")"
pass "unproven: the full writes proven warm by the warm probe"
