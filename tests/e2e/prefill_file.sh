# A sparse regular file: the holes are written with zeros, the data is left alone,
# and the content is unchanged.
source "$(dirname "$0")/lib.sh"
require_devices

MiB=$((1024 * 1024))
file=$TEST_DIR/image.raw
truncate -s $((64 * MiB)) "$file"
head -c $((3 * MiB)) /dev/urandom | dd of="$file" bs=1M seek=10 conv=notrunc status=none
head -c 8192 /dev/urandom | dd of="$file" bs=4k seek=$((50 * 256 + 1)) conv=notrunc status=none
before=$(sha "$file")
check_ge "$((64 * 1024 - $(du -k "$file" | cut -f1)))" 50000 "KiB of holes before"

"$prewarmd" prefill --json "$file" >"$TEST_DIR/out.json" || fail "prefill of a file: exit $?"
check_eq "$(sha "$file")" "$before" "content unchanged"
# At least the whole size (the file system may add an extent block of its own).
check_ge "$(du -k "$file" | cut -f1)" $((64 * 1024)) "KiB allocated after (no holes left)"
check_eq "$(jq -r .state "$TEST_DIR/out.json")" warm "state"
check_ge "$(jq .skipped_bytes "$TEST_DIR/out.json")" $((3 * MiB + 8192)) "bytes skipped as data"
check_eq "$(jq .done_bytes "$TEST_DIR/out.json")" $((64 * MiB)) "bytes done"
