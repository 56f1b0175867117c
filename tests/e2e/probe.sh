# prewarmd probe on cowsim disks: the allocation granularity found matches the
# backend's block size at 64 KiB, 2 MiB and 4 MiB; the cold probe allocates blocks
# (cowsim's first_writes), the warm places after a prefill allocate none, and the
# probe says the warming stuck; without a prefill the warm places allocate blocks,
# and the probe says "warming did not stick". Whole-block allocation is told from
# a sector bitmap (cowsim's bitmap mode). What the disk reads back never
# changes. The times themselves are bench/'s: a test judges by cowsim's counters
# and the probe's verdicts, which keep a wide margin.
source "$(dirname "$0")/lib.sh"
require_devices

sim_up --disk g64k=1GiB,block=64KiB --disk g2m=1GiB,block=2MiB --disk g4m=1GiB,block=4MiB \
    --disk unwarmed=1GiB --disk bitmap=1GiB,bitmap=on
put_data "$(dev_of g2m)" $((300 * 1024 * 1024)) $((1024 * 1024)) # data to keep
before=$(sha "$(dev_of g2m)")

for disk in g64k:65536 g2m:2097152 g4m:4194304; do
    name=${disk%%:*} block=${disk#*:}
    dev=$(dev_of "$name")
    "$prewarmd" probe --json --save "$TEST_DIR/$name.cold" "$dev" >"$TEST_DIR/$name.json" ||
        fail "$name: probe: exit $?"
    check_eq "$(jq .granularity_bytes "$TEST_DIR/$name.json")" "$block" \
        "$name: granularity ($(jq -r .granularity_note "$TEST_DIR/$name.json"))"
    check_eq "$(jq -r .allocation "$TEST_DIR/$name.json")" whole-block \
        "$name: allocation ($(jq -r .allocation_note "$TEST_DIR/$name.json"))"
    check_ge "$(stat_of "$name" first_writes)" 1 "$name: blocks the cold probe allocated"
    # Probed before, the disk shows no first-write penalty at the probe's places
    # (its draw of fresh places does: nothing is left unwritten), and nothing else
    # proves zero writes kept on cowsim: every byte written, unproven (exit 8).
    run_status "$prewarmd" prefill --json "$dev" >"$TEST_DIR/$name.prefill" 2>/dev/null
    check_eq "$status" 8 "$name: prefill after a probe: exit status"
    check_eq "$(jq '.written_bytes + .skipped_bytes' "$TEST_DIR/$name.prefill")" $((1 << 30)) \
        "$name: bytes the prefill wrote, or left holding data"
    allocated=$(stat_of "$name" first_writes)
    "$prewarmd" probe --json --warm --against "$TEST_DIR/$name.cold" "$dev" >"$TEST_DIR/$name.warm" ||
        fail "$name: warm probe: exit $? $(cat "$TEST_DIR/$name.warm")"
    check_eq "$(stat_of "$name" first_writes)" "$allocated" "$name: blocks the warm probe allocated: none new"
    check_eq "$(jq .warming_stuck "$TEST_DIR/$name.warm")" true "$name: warming stuck"
done
check_eq "$(sha "$(dev_of g2m)")" "$before" "what g2m reads back, after probes and prefill"

# No prefill between the probes: the warm places are as cold as ever.
dev=$(dev_of unwarmed)
"$prewarmd" probe --json --save "$TEST_DIR/unwarmed.cold" "$dev" >/dev/null || fail "probe: exit $?"
allocated=$(stat_of unwarmed first_writes)
run_status "$prewarmd" probe --warm --against "$TEST_DIR/unwarmed.cold" "$dev" \
    >"$TEST_DIR/out" 2>"$TEST_DIR/err"
check_ge "$(stat_of unwarmed first_writes)" $((allocated + 1)) "blocks the warm probe allocated on the unwarmed disk"
check_eq "$status" 1 "exit status when the warming did not stick"
grep -q "warning: warming did not stick" "$TEST_DIR/err" || fail "no warning: $(cat "$TEST_DIR/err")"
pass "$(cat "$TEST_DIR/err")"

# A sector bitmap: a write beside a first write pays a metadata sync of its own.
"$prewarmd" probe --json "$(dev_of bitmap)" >"$TEST_DIR/bitmap.json" || fail "bitmap: probe: exit $?"
check_eq "$(jq -r .allocation "$TEST_DIR/bitmap.json")" per-sector \
    "bitmap: allocation ($(jq -r .allocation_note "$TEST_DIR/bitmap.json"))"
check_ge "$(stat_of bitmap meta_syncs)" 1 "bitmap: metadata syncs the probe paid"
