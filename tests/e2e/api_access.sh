# Who may read and who may change (docs/security.md), tried as other local users
# would: over TCP loopback every change needs the token the daemon made at its first
# start, reads do not; over the unix socket root and the group change, others only
# read (403) unless they give the token; a listener that is not loopback wants the
# token for everything; the token rotates on a reload; refusals are logged once per
# peer and minute, the token never.
source "$(dirname "$0")/lib.sh"
require_devices
command -v setpriv >/dev/null || cannot_run "no setpriv (util-linux)"
command -v groupadd >/dev/null || cannot_run "no groupadd (passwd)"

sim_up --disk a=256MiB
# A group of this test's own stands for prewarmd's; nobody (65534) for any user.
group=prewarmd-e2e-$$
groupadd --system "$group" || fail "groupadd $group"
on_cleanup "groupdel $group"
gid=$(getent group "$group" | cut -d: -f3)
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
as_member() { setpriv --reuid=65534 --regid=65534 --groups="$gid" "$@"; }
chmod 711 "$TEST_DIR" # others may reach the socket, as its own mode says
touch "$TEST_DIR/body" "$TEST_DIR/headers"
chmod 666 "$TEST_DIR/body" "$TEST_DIR/headers" # curl writes them as nobody too

api_config
remote_port=$((API_PORT + 1))
start_daemon '[discovery]
match = '"$(sim_match)"'
[prefill]
auto_prefill = "never"
probe = false
[api]
listen = ["127.0.0.1:'"$API_PORT"'", "0.0.0.0:'"$remote_port"'"]
socket = "'"$API_SOCKET"'"
socket_mode = "0666"
socket_group = "'"$group"'"'
wait_for_api

token_file=$TEST_DIR/state/api.token
[[ -f $token_file ]] || fail "no token made at the first start"
check_eq "$(stat -c '%a %U' "$token_file")" "600 root" "the token file the daemon made"
token=$(cat "$token_file")
check_eq "${#token}" 43 "the token's length"
wait_for_log "api: made a token for changes over TCP in $token_file"
# This test's own disk, by its id: the list holds other tests' loop devices too
# ("not considered"), one of them maybe a cowsim disk named "a" as well.
for _ in $(seq 50); do
    id=$(curl -s "$API/v1/disks" |
        jq -r --arg p "$(sim_id a)" '[.disks[] | select(.id | startswith($p))][0].id')
    [[ $id == loop-* ]] && break
    sleep 0.1
done
[[ $id == loop-* ]] || fail "no disk: $(curl -s "$API/v1/disks")"

# STATUS USER WAY METHOD PATH [CURL ARGS...]: WAY is tcp, remote or socket.
expect() {
    local want=$1 user=$2 way=$3 method=$4 path=$5 got
    shift 5
    local -a where=("$API$path")
    [[ $way == remote ]] && where=("http://127.0.0.1:$remote_port$path")
    [[ $way == socket ]] && where=(--unix-socket "$API_SOCKET" "http://x$path")
    got=$("as_$user" curl -s -o "$TEST_DIR/body" -D "$TEST_DIR/headers" -w '%{http_code}' \
        -X "$method" "$@" "${where[@]}") || true
    [[ $got == "$want" ]] || fail "$method $path as $user over $way: expected $want, got $got: $(cat "$TEST_DIR/body")"
    pass "$method $path as $user over $way: $got"
}
as_root() { "$@"; }
bearer=(-H "Authorization: Bearer $token")
json=(-H 'Content-Type: application/json')
changes=("POST /v1/disks/$id/start" "POST /v1/disks/$id/pause" "POST /v1/disks/$id/resume"
    "POST /v1/disks/$id/cancel" "POST /v1/disks/$id/release" "POST /v1/disks/$id/probe"
    "PATCH /v1/settings")

# TCP loopback: reads for anyone, no change without the token.
expect 200 nobody tcp GET /v1/disks
expect 200 nobody tcp GET /metrics
for change in "${changes[@]}"; do
    expect 401 nobody tcp $change
    grep -qi '^WWW-Authenticate: Bearer' "$TEST_DIR/headers" || fail "no WWW-Authenticate on the 401"
    expect 401 nobody tcp $change -H "Authorization: Bearer ${token:1}x"
done
expect 401 nobody tcp PATCH /v1/settings "${json[@]}" -d '{"total_rate_bytes_per_s": 0}'
check_eq "$(curl -s "$API/v1/settings" | jq .total_rate_bytes_per_s)" 209715200 "the rate after the refused PATCH"
disk=$(curl -s "$API/v1/disks/$id")
check_eq "$(jq -r .state <<<"$disk")" discovered "the disk after the refused start ($(jq -r .reason <<<"$disk"))"
# With the token, the same user is obeyed.
expect 202 nobody tcp POST "/v1/disks/$id/start" "${bearer[@]}"
expect 200 nobody tcp POST "/v1/disks/$id/pause" "${bearer[@]}"
expect 200 nobody tcp POST "/v1/disks/$id/resume" "${bearer[@]}"
expect 200 nobody tcp POST "/v1/disks/$id/cancel" "${bearer[@]}"
expect 200 nobody tcp POST "/v1/disks/$id/release" "${bearer[@]}"
expect 200 nobody tcp POST "/v1/disks/$id/probe" "${bearer[@]}"
expect 200 nobody tcp PATCH /v1/settings "${bearer[@]}" "${json[@]}" -d '{"max_parallel": 2}'

# The unix socket: others read; root and the group change; others with the token too.
expect 200 nobody socket GET "/v1/disks/$id"
for change in "${changes[@]}"; do
    expect 403 nobody socket $change
done
expect 401 nobody socket PATCH /v1/settings -H "Authorization: Bearer ${token:1}x"
expect 200 nobody socket PATCH /v1/settings "${bearer[@]}" "${json[@]}" -d '{"max_parallel": 3}'
expect 202 member socket POST "/v1/disks/$id/start"
expect 200 member socket POST "/v1/disks/$id/cancel"
expect 200 member socket PATCH /v1/settings "${json[@]}" -d '{"max_parallel": 4}'
expect 200 root socket PATCH /v1/settings "${json[@]}" -d '{"max_parallel": 1}'

# A listener that is not loopback: the token for everything.
expect 401 nobody remote GET /v1/disks
expect 200 nobody remote GET /v1/disks "${bearer[@]}"
expect 401 root remote PATCH /v1/settings "${json[@]}" -d '{"max_parallel": 2}'

# Refusals in the log: once per peer and minute; the token never.
check_eq "$(grep -c "api: refused .* from uid 65534 (127.0.0.1) on 127.0.0.1:$API_PORT" "$DAEMON_LOG")" 1 \
    "refusals logged for uid 65534 over TCP (the kernel names the peer)"
check_eq "$(grep -c "api: refused .* from uid 65534 on unix:" "$DAEMON_LOG")" 1 \
    "refusals logged for uid 65534 on the socket"
if grep -qF "${token:0:20}" "$DAEMON_LOG"; then fail "the token is in the log"; fi
pass "the token is never logged"

# Rotation: a new token in the file and a reload; or the file removed and a reload.
new=$(head -c 32 /dev/urandom | base64 -w0 | tr '+/' '-_' | tr -d '=')
(umask 077 && printf '%s\n' "$new" >"$token_file.new") && mv "$token_file.new" "$token_file"
kill -HUP "$DAEMON_PID"
wait_for_log "reload:"
expect 401 root tcp PATCH /v1/settings "${bearer[@]}"
expect 200 root tcp PATCH /v1/settings -H "Authorization: Bearer $new"
rm "$token_file"
kill -HUP "$DAEMON_PID"
for _ in $(seq 50); do [[ -f $token_file ]] && break; sleep 0.1; done
check_eq "$(stat -c %a "$token_file" 2>&1)" 600 "a token made again on the reload after it was removed"
expect 401 root tcp PATCH /v1/settings -H "Authorization: Bearer $new"
expect 200 root tcp PATCH /v1/settings -H "Authorization: Bearer $(cat "$token_file")"

# A rotation that fails (the new file readable by all) leaves no token working,
# the old one included; the log says so. Fixed and reloaded, the new one works.
old=$(cat "$token_file")
new=$(head -c 32 /dev/urandom | base64 -w0 | tr '+/' '-_' | tr -d '=')
printf '%s\n' "$new" >"$token_file.new" && chmod 644 "$token_file.new" && mv "$token_file.new" "$token_file"
kill -HUP "$DAEMON_PID"
wait_for_log "reload: .*chmod 600 it; no token works until the file is fixed"
expect 401 root tcp PATCH /v1/settings -H "Authorization: Bearer $old"
expect 401 root tcp PATCH /v1/settings -H "Authorization: Bearer $new"
chmod 600 "$token_file"
kill -HUP "$DAEMON_PID"
for _ in $(seq 50); do
    [[ $(curl -s -o /dev/null -w '%{http_code}' -X PATCH -H "Authorization: Bearer $new" "$API/v1/settings") == 200 ]] &&
        break
    sleep 0.1
done
expect 200 root tcp PATCH /v1/settings -H "Authorization: Bearer $new"

stop_daemon
