# A job that cannot make its safety checks stops: `prewarmd prefill` runs out of
# descriptors mid-job (prlimit on its pid), and dd opens
# the disk and writes. The kernel's write count cannot be read, nor /proc scanned
# for openers: neither may pass as "nobody else". The job steps aside (exit 3) at
# its next check, saying which one failed, and what dd wrote reads back.
source "$(dirname "$0")/lib.sh"
require_devices
command -v prlimit >/dev/null || cannot_run "no prlimit (util-linux)"

sim_up --disk x=1GiB
dev=$(dev_of x)
head -c 64M /dev/urandom >"$TEST_DIR/pattern"

"$prewarmd" prefill --strategy full --rate 64MiB/s "$dev" >"$TEST_DIR/prefill.out" 2>&1 &
job=$!
on_cleanup "kill $job 2>/dev/null; wait $job 2>/dev/null || true"
wait_for_line "$TEST_DIR/prefill.out" "chunks, queue depth" 10
# A limit of 1: the descriptors it has stay open, and any open fails (EMFILE).
prlimit --pid "$job" --nofile=1:1
pass "the job can open no more descriptors"

dd if="$TEST_DIR/pattern" of="$dev" bs=1M seek=512 oflag=direct status=none
run_status wait "$job"
check_eq "$status" 3 "exit status (stepped aside: $(grep -o 'stepping aside: .*' "$TEST_DIR/prefill.out"))"
grep -q "stepping aside: .*\(the scan for openers failed at /proc: Too many open files\|write count cannot be read\)" "$TEST_DIR/prefill.out" ||
    fail "the job did not say which check it could not make: $(cat "$TEST_DIR/prefill.out")"
pass "the job said which check it could not make"
cmp -s "$TEST_DIR/pattern" <(dd if="$dev" bs=1M skip=512 count=64 iflag=direct status=none) ||
    fail "what dd wrote does not read back: $(cat "$TEST_DIR/prefill.out")"
pass "what dd wrote reads back"
