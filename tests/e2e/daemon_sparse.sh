# The daemon's jobs warm sparsely where the probe proves it enough (strategy =
# "auto", the default): on a whole-block backend that allocates on the storage
# host, the job writes one 4 KiB piece per 2 MiB block, the middle of the blocks
# is proven warm, every block is allocated with under 1% of the disk sent, and the
# API shows the strategy with the disk covered beside the bytes written; on a
# sector-bitmap backend the job writes every byte. Where the proof after a sparse
# job fails (cowsim slows exactly the places the proof times), the daemon writes
# every byte after all, in the same job.
source "$(dirname "$0")/lib.sh"
require_devices
require_udevd

sim_up --host-allocation --disk whole=1GiB --disk bitmap=256MiB,bitmap=on --disk unproven=1GiB
# The proof's places on a 1 GiB disk: 16 strides of 64 MiB, each 32 MiB on and
# half a 2 MiB block into it. Nothing else writes there first.
for i in $(seq 0 15); do
    control "delay write unproven 40ms range=$(((i * 64 + 32) * 1024 * 1024 + 1024 * 1024))+4096"
done
# One job at a time: the probe's verdict is a timing, and another disk's job at
# full speed beside it makes it "unknown" (full writes, safe, but not this test).
start_daemon '[discovery]
match = '"$(sim_match)"'
attach_grace = "1s"
[prefill]
strategy = "auto"
total_rate = "unlimited"
max_parallel = 1'

wait_for_log "$(disk_pattern whole | cut -d' ' -f1): sparse: one 4.00 KiB write per 2.00 MiB block" 30
wait_for_log "$(disk_pattern whole | cut -d' ' -f1): warm: the middle of the blocks is warm" 60
wait_for_log "$(disk_pattern whole): running -> warm" 30
check_eq "$(stat_of whole blocks_allocated)" "$(stat_of whole blocks_total)" "whole: every block allocated"
check_ge $((1024 * 1024 * 1024 / 100)) "$(stat_of whole link_bytes_written)" \
    "whole: 1% of the disk, at least the bytes sent over the link"
id=$(curl -s "$API/v1/disks" | jq -r --arg p "$(sim_id whole)" '.disks[] | select(.id | startswith($p)) | .id')
progress=$(curl -s "$API/v1/disks/$id" | jq .progress)
check_eq "$(jq -r .strategy <<<"$progress")" sparse "whole: the strategy in the API"
check_eq "$(jq -r .done_bytes <<<"$progress")" $((1024 * 1024 * 1024)) "whole: the disk covered"
check_ge $((16 * 1024 * 1024)) "$(jq -r .written_bytes <<<"$progress")" "whole: 16 MiB, at least the bytes written"

wait_for_log "$(disk_pattern bitmap | cut -d' ' -f1): full writes: the probe found per-sector allocation" 30
wait_for_log "$(disk_pattern bitmap): running -> warm" 60
check_ge "$(stat_of bitmap link_bytes_written)" $((256 * 1024 * 1024)) "bitmap: bytes sent (the whole disk)"

unproven=$(disk_pattern unproven | cut -d' ' -f1)
wait_for_log "$unproven: sparse: one 4.00 KiB write per 2.00 MiB block" 30
wait_for_log "$unproven: the middle of the blocks is still cold after sparse writes .*: full writes after all" 60
wait_for_log "$(disk_pattern unproven): running -> warm" 60
check_eq "$(stat_of unproven blocks_allocated)" "$(stat_of unproven blocks_total)" "unproven: every block allocated"
check_ge "$(stat_of unproven link_bytes_written)" $((1024 * 1024 * 1024)) "unproven: bytes sent (every byte, after all)"
id=$(curl -s "$API/v1/disks" | jq -r --arg p "$(sim_id unproven)" '.disks[] | select(.id | startswith($p)) | .id')
check_eq "$(curl -s "$API/v1/disks/$id" | jq -r .progress.strategy)" full "unproven: the strategy in the API at the end"
