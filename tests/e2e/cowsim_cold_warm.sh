# The seed's phenomenon (shared/seeds, the XCP post): on a new thin disk, 1 KiB
# direct writes are far slower than the same writes once the blocks are written.
# The bar is a ratio within one run, and the simulated costs keep it far from it.
source "$(dirname "$0")/lib.sh"
require_devices

sim_up --bitmap --block-size 4MiB --sync-latency 2ms --disk xvdb=1GiB
dev=$(dev_of xvdb)

seconds() { # runs dd, prints its elapsed seconds
    dd "$@" 2>&1 | awk '/copied/ { for (i = 1; i <= NF; i++) if ($i == "s,") print $(i - 1) }'
}
cold=$(seconds if=/dev/zero of="$dev" bs=1k count=500 seek=2048 oflag=direct)
warm=$(seconds if=/dev/zero of="$dev" bs=1k count=500 seek=2048 oflag=direct)
echo "cold: $cold s, warm: $warm s for 500 x 1 KiB"
ratio=$(awk -v c="$cold" -v w="$warm" 'BEGIN { printf "%.1f", c / w }')
check_ge "$ratio" 20 "cold/warm time ratio of 1 KiB direct writes"
check_eq "$(stat_of xvdb meta_syncs)" 499 "metadata syncs (every cold write but the allocating one)"
