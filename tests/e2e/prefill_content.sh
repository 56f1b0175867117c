# A prefill never changes what the disk reads back: sha256 before and after, in
# every mode, on disks mixing data and zeros with odd tails, on 512- and
# 4096-byte logical blocks, through io_uring and through the pread/pwrite fallback.
source "$(dirname "$0")/lib.sh"
require_devices

MiB=$((1024 * 1024))
size=$((40 * MiB + 12 * 1024)) # not a whole number of chunks or blocks
disks=()
for mode in zero rewrite read; do
    for io in uring sync; do
        disks+=(--disk "$mode-$io=$size")
    done
done

for sector in 512 4096; do
    sim_up --sector-size "$sector" "${disks[@]}"
    for mode in zero rewrite read; do
        for io in uring sync; do
            name=$mode-$io
            dev=$(dev_of "$name")
            # Data in a few chunks (one straddling a chunk boundary, one in the tail).
            put_data "$dev" $((5 * MiB)) 8192
            put_data "$dev" $((12 * MiB - 4096)) 16384
            put_data "$dev" $((40 * MiB + 4096)) 4096
            before=$(sha "$dev")
            allocated_before=$(stat_of "$name" blocks_allocated)
            # Read mode writes nothing, so nothing proves it warm: exit 8, unproven.
            expected=0 outcome=warm
            [[ $mode == read ]] && expected=8 outcome=unproven
            run_status "$prewarmd" prefill --strategy full --mode "$mode" --io-engine "$io" --json "$dev" >"$TEST_DIR/out.json"
            check_eq "$status" "$expected" "$name on $sector-byte sectors: exit status"
            check_eq "$(sha "$dev")" "$before" "$name, $sector-byte sectors: content unchanged"
            check_eq "$(jq -r .state "$TEST_DIR/out.json")" "$outcome" "$name: state"
            total=$(stat_of "$name" blocks_total)
            case $mode in
            zero)
                check_eq "$(stat_of "$name" blocks_allocated)" "$total" "$name: every block allocated"
                # The data lies in 4 blocks of 2 MiB: the tail block is only 12 KiB.
                check_eq "$(jq .skipped_bytes "$TEST_DIR/out.json")" $((3 * 2 * MiB + 12 * 1024)) \
                    "$name: bytes of the blocks holding data, skipped"
                ;;
            rewrite)
                check_eq "$(stat_of "$name" blocks_allocated)" "$total" "$name: every block allocated"
                check_eq "$(jq .written_bytes "$TEST_DIR/out.json")" "$size" "$name: all written back"
                ;;
            read)
                check_eq "$(stat_of "$name" blocks_allocated)" "$allocated_before" \
                    "$name: nothing allocated by reading"
                ;;
            esac
        done
    done
    sim_down
done

# A clone: rewrite copies every block up from the parent and changes nothing (64 MiB:
# room for the probe's 8 regions, which prove it warm).
head -c $((24 * MiB)) /dev/urandom >"$TEST_DIR/parent.img"
truncate -s $((64 * MiB)) "$TEST_DIR/parent.img"
sim_up --disk "clone=64MiB,parent=$TEST_DIR/parent.img"
dev=$(dev_of clone)
before=$(sha "$dev")
"$prewarmd" prefill --strategy full --mode rewrite "$dev" >/dev/null || fail "clone rewrite: exit $?"
check_eq "$(sha "$dev")" "$before" "clone: content unchanged"
check_eq "$(stat_of clone blocks_allocated)" "$(stat_of clone blocks_total)" "clone: every block copied up"
check_eq "$(sha "$TEST_DIR/parent.img")" "$(sha "$dev")" "clone: still reads its parent's bytes"
