# Adaptive mode in the daemon: while fio writes to disk A of the same cowsim (one
# backend, bandwidth-capped), the prefill of disk B backs off, saying why; once
# fio is done it is back at full rate, and B is warmed to the end. adaptive_watch
# keeps the daemon's eyes on A only.
source "$(dirname "$0")/lib.sh"
require_devices
require_udevd
command -v fio >/dev/null || cannot_run "no fio (package fio)"

sim_up --bandwidth 100MiB/s --disk a=256MiB --disk b=1GiB
"$prewarmd" prefill --strategy full --json "$(dev_of a)" >/dev/null 2>&1 || fail "warming A: exit $?"
fio --name=fg --filename="$(dev_of a)" --rw=randwrite --bs=4k --iodepth=1 --direct=1 \
    --ioengine=psync --time_based --runtime=10 --size=256M >"$TEST_DIR/fio" 2>&1 &
fio_pid=$!
on_cleanup "kill $fio_pid 2>/dev/null || true"

rule=$(sim_rule)
start_daemon "[discovery]
match = [\"${rule%'*'}sim_mnt_b-*\"]
attach_grace = \"1s\"
[prefill]
total_rate = \"unlimited\"
# Disk A alone: other tests' disks, busy beside this one, are none of its business.
adaptive_watch = [\"${rule%'*'}sim_mnt_a-*\"]"
wait_for_log "adaptive: backing off, $(basename "$(dev_of a)") at [0-9.]+ ms, [0-9.]+ ms alone" 20
wait "$fio_pid" || fail "fio: $(tail -5 "$TEST_DIR/fio")"
wait_for_log "adaptive: the other disks are as fast as alone: full rate again" 30
wait_for_log "$(disk_pattern b): running -> warm" 120
check_eq "$(stat_of b blocks_allocated)" "$(stat_of b blocks_total)" "B: every block allocated"
