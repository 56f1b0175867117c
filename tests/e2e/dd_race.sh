# A raw writer arriving during a job loses nothing: dd (direct, then buffered)
# writes 256 MiB of random data from offset 0, started 0-1 s after `prewarmd
# prefill` starts, 20 rounds each, and once into the middle of the disk mid-job;
# every byte reads back (O_DIRECT), and the job stepped aside naming dd.
# PREWARMD_RACE_STRESS=1: cowsim delays every read by 20 ms, which widens the
# window between the job's read of a chunk and its write of it (the window a
# missing step-aside would lose data in); the rounds are the same.
source "$(dirname "$0")/lib.sh"
require_devices

rounds=${PREWARMD_RACE_ROUNDS:-20}
sim_up --disk d=1GiB --disk b=1GiB --disk m=1GiB
head -c 256M /dev/urandom >"$TEST_DIR/pattern"
if [[ ${PREWARMD_RACE_STRESS:-0} == 1 ]]; then
    control "delay read * 20ms"
    pass "stress: every read of the simulator takes 20 ms longer"
fi

# One round: a prefill, dd into it after DELAY seconds at OFFSET (MiB) with dd's
# FLAGS, then what dd wrote, read back with O_DIRECT.
round() { # NAME DELAY OFFSET_MIB [DD FLAGS...]
    local name=$1 delay=$2 offset=$3 dev status
    shift 3
    dev=$(dev_of "$name")
    "$prewarmd" prefill --strategy full --rate 512MiB/s "$dev" >"$TEST_DIR/prefill.out" 2>&1 &
    local job=$!
    sleep "$delay"
    dd if="$TEST_DIR/pattern" of="$dev" bs=1M seek="$offset" status=none "$@"
    status=0
    wait "$job" || status=$?
    cmp -s "$TEST_DIR/pattern" <(dd if="$dev" bs=1M skip="$offset" count=256 iflag=direct status=none) ||
        fail "$name round at $delay s, offset $offset MiB, dd $*: what dd wrote does not read back; prefill said: $(cat "$TEST_DIR/prefill.out")"
    if [[ $status == 3 ]]; then
        grep -q "stepping aside\( before the job\)\?: the disk \(was opened\|is open\) by dd (pid" "$TEST_DIR/prefill.out" ||
            grep -q "stepping aside\( before the job\)\?: another writer wrote" "$TEST_DIR/prefill.out" ||
            fail "$name: the job stepped aside without saying for whom: $(cat "$TEST_DIR/prefill.out")"
        stepped=$((stepped + 1))
    elif [[ $status != 0 ]]; then
        fail "$name: prefill ended with $status: $(cat "$TEST_DIR/prefill.out")"
    fi
    # The next round starts from a blank disk again (zeros cost the simulator no space).
    dd if=/dev/zero of="$dev" bs=1M seek="$offset" count=256 oflag=direct status=none
}

for kind in direct buffered; do
    stepped=0
    for i in $(seq "$rounds"); do
        delay=$(awk -v r="$RANDOM" 'BEGIN { printf "%.2f", r % 100 / 100 }')
        if [[ $kind == direct ]]; then
            round d "$delay" 0 oflag=direct
        else
            round b "$delay" 0
        fi
    done
    pass "dd $kind from offset 0, $rounds rounds: all of it read back; the job stepped aside in $stepped"
    check_eq "$stepped" "$rounds" "rounds in which the job stepped aside for dd $kind"
done

stepped=0
round m 1.2 512 oflag=direct
check_eq "$stepped" 1 "the job stepped aside for dd into the middle of the disk mid-job"
