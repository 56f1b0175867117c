# The stats file counts allocations exactly, and allocations persist in the store.
source "$(dirname "$0")/lib.sh"
require_devices

KiB=1024 MiB=$((1024 * 1024))
mkdir -p "$TEST_DIR/stores"
sim_up --store-dir "$TEST_DIR/stores" --block-size 64KiB --disk xvdb=64MiB
dev=$(dev_of xvdb)
check_eq "$(stat_of xvdb blocks_total)" 1024 "blocks in 64 MiB of 64 KiB blocks"

dd if=/dev/urandom of="$dev" bs=4k count=1 oflag=direct status=none              # block 0
dd if=/dev/urandom of="$dev" bs=4k count=1 seek=1 oflag=direct status=none       # block 0 again
dd if=/dev/urandom of="$dev" bs=128k count=1 seek=$((1 * MiB / (128 * KiB) * 1)) \
    oflag=direct status=none                                                      # blocks 16, 17
dd if=/dev/urandom of="$dev" bs=128k count=1 seek=$((2 * MiB / (128 * KiB))) \
    oflag=direct status=none
dd if=/dev/urandom of="$dev" bs=512 count=1 seek=$(((2 * MiB + 96 * KiB) / 512)) \
    oflag=direct status=none                                                      # block 33 again

check_eq "$(stat_of xvdb blocks_allocated)" 5 "blocks allocated"
check_eq "$(stat_of xvdb first_writes)" 5 "first writes"
check_eq "$(stat_of xvdb allocated_bytes)" $((5 * 64 * KiB)) "allocated bytes"
check_eq "$(stat_of xvdb backend_bytes_written)" $((5 * 64 * KiB + 4 * KiB + 512)) \
    "bytes written to the backend"
check_eq "$(stat_of xvdb bytes_written)" $((4 * KiB * 2 + 128 * KiB * 2 + 512)) \
    "bytes written by clients"
check_ge "$(stat_of xvdb writes)" 5 "writes seen"

dd if=/dev/zero of="$dev" bs=4M oflag=direct status=none 2>/dev/null || true
check_eq "$(stat_of xvdb blocks_allocated)" 1024 "blocks allocated after a full write"
check_eq "$(stat_of xvdb first_writes)" 1024 "first writes after a full write"
check_eq "$(jq .backend.used_bytes "$SIM/mnt/.stats")" $((64 * MiB)) "backend space used"

sim_down
sim_up --store-dir "$TEST_DIR/stores" --block-size 64KiB --disk xvdb=64MiB
check_eq "$(stat_of xvdb blocks_allocated)" 1024 "blocks allocated after a restart"
check_eq "$(stat_of xvdb first_writes)" 0 "first writes after a restart"
