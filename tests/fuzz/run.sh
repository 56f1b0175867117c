# Runs a libFuzzer target of the fuzz preset (build-fuzz/, which scripts/test builds
# first) for SECONDS, from the committed seeds; fails on any crash, leak or broken
# promise, printing the input that caused it.
# usage: run.sh TARGET SECONDS
set -euo pipefail
target=$1 seconds=$2
src=$PREWARMD_SRC/tests/fuzz
fuzzer=$PREWARMD_SRC/build-fuzz/bin/${target}_fuzz
if [[ ! -x $fuzzer ]]; then
    echo "no $fuzzer: build it with 'cmake --preset fuzz && cmake --build --preset fuzz' (scripts/test does)"
    [[ ${PREWARMD_ALLOW_SKIP:-0} == 1 ]] && exit 77
    exit 1
fi
work=$(mktemp -d /var/tmp/prewarmd-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/corpus"
status=0
"$fuzzer" -max_total_time="$seconds" -dict="$src/$target.dict" -artifact_prefix="$work/" \
    -print_final_stats=1 "$work/corpus" "$src/corpus/$target" >"$work/log" 2>&1 || status=$?
grep -E '^(#[0-9]+ +DONE|Done|stat::number_of_executed_units|INFO: Seed)' "$work/log" || true
if ((status != 0)); then
    tail -60 "$work/log"
    for crash in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
        [[ -e $crash ]] && echo "input ($(basename "$crash")), base64: $(base64 -w0 "$crash")"
    done
    echo "FAIL: $target fuzzer stopped (status $status)"
    exit 1
fi
echo "ok: $target fuzzer: $seconds s without a crash, a leak or a broken promise"
