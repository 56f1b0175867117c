# A second run over a warm disk, with no record (a lost state directory, a clone of
# a warm disk): on cowsim's whole-block, sector-bitmap and one-allocation-at-a-time
# disks, the first `prewarmd prefill` ends warm with every block allocated; the
# second sends at most 5% of the disk's bytes over cowsim's link, never says warm
# for what it did not prove, and leaves the disk as it was. Judged by cowsim's
# counters.
source "$(dirname "$0")/lib.sh"
require_devices

size=$((1 << 30))
sim_up --disk whole=1GiB --disk bitmap=1GiB,bitmap=on --disk one=1GiB,allocations=1
for name in whole bitmap one; do
    dev=$(dev_of "$name")
    run_status "$prewarmd" prefill "$dev" >"$TEST_DIR/$name.first" 2>&1
    check_eq "$status" 0 "$name: first run's exit status ($(tail -1 "$TEST_DIR/$name.first" | cut -c1-80))"
    check_eq "$(stat_of "$name" blocks_allocated)" "$(stat_of "$name" blocks_total)" \
        "$name: every block allocated by the first run"
    before=$(sha "$dev")
    link=$(stat_of "$name" link_bytes_written)
    run_status "$prewarmd" prefill --json "$dev" >"$TEST_DIR/$name.json" 2>"$TEST_DIR/$name.err"
    sent=$(($(stat_of "$name" link_bytes_written) - link))
    check_le "$sent" $((size * 5 / 100)) "$name: bytes the second run sent (5% of the disk at most)"
    state=$(jq -r .state "$TEST_DIR/$name.json")
    # Warm only with a proof; otherwise unproven, and it says why (exit 8).
    case $state in
    warm) check_eq "$status" 0 "$name: second run, warm: exit status" ;;
    unproven) check_eq "$status" 8 "$name: second run, unproven: exit status" ;;
    *) fail "$name: second run ended $state: $(jq -r .reason "$TEST_DIR/$name.json")" ;;
    esac
    pass "$name: second run $state: $(jq -r .reason "$TEST_DIR/$name.json" | cut -c1-120)"
    check_eq "$(sha "$dev")" "$before" "$name: what the disk reads back"
done
