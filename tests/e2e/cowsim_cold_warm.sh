# The seed's phenomenon (the XCP post in docs/design.md): on a new thin disk, 1 KiB
# direct writes pay for an allocation and a metadata sync each; the same writes
# once the blocks are written pay for neither. Judged by cowsim's counters of what
# each write cost, not by the clock (a loaded machine blurs times; the demo and
# bench/ time them).
source "$(dirname "$0")/lib.sh"
require_devices

sim_up --bitmap --block-size 4MiB --sync-latency 2ms --disk xvdb=1GiB
dev=$(dev_of xvdb)

seconds() { # runs dd, prints its elapsed seconds
    dd "$@" 2>&1 | awk '/copied/ { for (i = 1; i <= NF; i++) if ($i == "s,") print $(i - 1) }'
}
cold=$(seconds if=/dev/zero of="$dev" bs=1k count=500 seek=2048 oflag=direct)
check_eq "$(stat_of xvdb first_writes)" 1 "allocations by the cold writes (one 4 MiB block)"
check_eq "$(stat_of xvdb meta_syncs)" 499 "metadata syncs (every cold write but the allocating one)"
warm=$(seconds if=/dev/zero of="$dev" bs=1k count=500 seek=2048 oflag=direct)
check_eq "$(stat_of xvdb first_writes)" 1 "allocations after the same writes again"
check_eq "$(stat_of xvdb meta_syncs)" 499 "metadata syncs after the same writes again"
echo "for the record: cold $cold s, warm $warm s for 500 x 1 KiB"
