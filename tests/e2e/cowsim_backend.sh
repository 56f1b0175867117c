# The shared backend: its bandwidth cap holds for all disks together, while holes
# are served without touching it. Bounds come from the simulated costs, not from
# this machine's speed: 64 MiB over a 64 MiB/s link cannot take less than 1 s.
source "$(dirname "$0")/lib.sh"
require_devices

sim_up --bandwidth 64MiB/s --alloc-latency 0ms --disk a=1GiB --disk b=1GiB
a=$(dev_of a) b=$(dev_of b)

elapsed_ms() { local start=$(date +%s%N); "$@"; echo $((($(date +%s%N) - start) / 1000000)); }

ms=$(elapsed_ms dd if=/dev/zero of="$a" bs=4M count=16 oflag=direct status=none)
check_ge "$ms" 1000 "milliseconds to write 64 MiB over a 64 MiB/s link"

both() {
    dd if=/dev/zero of="$a" bs=4M count=8 seek=100 oflag=direct status=none &
    dd if=/dev/zero of="$b" bs=4M count=8 oflag=direct status=none
    wait
}
ms=$(elapsed_ms both)
check_ge "$ms" 1000 "milliseconds for two disks to write 32 MiB each over one 64 MiB/s link"

read_before=$(stat_of b backend_bytes_read)
dd if="$b" of=/dev/null bs=4M skip=64 count=128 iflag=direct status=none
check_ge "$(stat_of b hole_bytes_read)" $((512 * 1024 * 1024)) "bytes of holes served"
check_eq "$(stat_of b backend_bytes_read)" "$read_before" "bytes the holes cost the link"
