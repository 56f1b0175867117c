# The API's budgets, held by several users at once over loopback: 2 event streams
# per user and 8 in all, past either 503 `too-many-streams` at once, while root is
# still served; with few workers (max_connections 4) a user holds 1 connection, not
# half of them, and another user is served meanwhile; other users together hold 3,
# the last is root's. Where the kernel's socket
# table cannot be asked over netlink (tests/tools/net_fault.cc), the daemon says so
# once and tells the users apart by /proc/net/tcp: root keeps its own budget.
source "$(dirname "$0")/lib.sh"
command -v setpriv >/dev/null || cannot_run "no setpriv (package util-linux)"

api_config
config() { # MAX_CONNECTIONS
    printf '[discovery]\nmatch = ["name:no-such-disk"]\n%s\nmax_connections = %s' "$API_CONFIG" "$1"
}
start_daemon "$(config 16)"
wait_for_api

as_uid() { setpriv --reuid="$1" --regid="$1" --clear-groups -- "${@:2}"; }
# Where the other users' curl may write (the test's directory is root's alone).
out=$(mktemp -d /tmp/prewarmd-streams.XXXXXX)
chmod 1777 "$out"
on_cleanup "rm -rf $out"
pids=()
on_cleanup 'kill ${pids[@]+"${pids[@]}"} 2>/dev/null || true'
# An event stream held open by UID, its head in FILE once answered.
hold_stream() { # UID FILE
    as_uid "$1" curl -sN -D "$2" -o /dev/null "$API/v1/events" &
    pids+=($!)
    wait_for_line "$2" "^HTTP/1.1 200" 10
}
# The status of one more stream (or GET) by UID, its body in $out/body.UID.
status_as() { # UID [PATH]
    rm -f "$out/body.$1"
    as_uid "$1" curl -s --max-time 5 -o "$out/body.$1" -w '%{http_code}' "$API${2:-/v1/events}"
}

hold_stream 1001 "$out/s1001a"
hold_stream 1001 "$out/s1001b"
check_eq "$(status_as 1001)" 503 "a third stream of one user"
check_eq "$(jq -r .type "$out/body.1001")" urn:prewarmd:problem:too-many-streams "its problem type"
for uid in 1002 1003 1004; do
    hold_stream $uid "$out/s${uid}a"
    hold_stream $uid "$out/s${uid}b"
done
pass "8 streams held by 4 users"
check_eq "$(status_as 1005)" 503 "a ninth stream, of a fifth user"
check_eq "$(jq -r .type "$out/body.1005")" urn:prewarmd:problem:too-many-streams "its problem type"
check_eq "$(status_as 0 /healthz)" 200 "root's request meanwhile"
kill "${pids[@]}" 2>/dev/null || true
pids=()

stop_daemon
start_daemon "$(config 4)"
wait_for_api
hold_stream 1001 "$out/few1001"
check_eq "$(status_as 1001 /healthz)" 503 "4 workers: a second connection of one user"
check_eq "$(jq -r .type "$out/body.1001")" urn:prewarmd:problem:too-many-connections "its problem type"
check_eq "$(status_as 1002 /healthz)" 200 "another user meanwhile"
check_eq "$(status_as 0 /healthz)" 200 "root meanwhile"
# Other users together hold 3 of the 4: the last is root's.
hold_stream 1002 "$out/few1002"
hold_stream 1003 "$out/few1003"
check_eq "$(status_as 1004 /healthz)" 503 "a fourth user, while 3 others hold 3 of 4 workers"
check_eq "$(jq -r .type "$out/body.1004")" urn:prewarmd:problem:too-many-connections "its problem type"
grep -q "the rest are root's" "$out/body.1004" || fail "its detail: $(cat "$out/body.1004")"
check_eq "$(status_as 0 /healthz)" 200 "root meanwhile, on the worker kept for it"

stop_daemon
: >"$DAEMON_LOG"
lib=$PREWARMD_BIN/libnet_fault.so
[[ -f $lib ]] || fail "no $lib (the build makes it)"
LD_PRELOAD=$lib PREWARMD_SOCK_DIAG_FAULT=1 start_daemon "$(config 16)"
wait_for_api
hold_stream 65534 "$out/nobody-a"
hold_stream 65534 "$out/nobody-b"
check_eq "$(status_as 65534)" 503 "no netlink: a third stream of nobody's"
hold_stream 0 "$out/root-a"
pass "no netlink: root's stream beside nobody's two"
check_eq "$(grep -c "NETLINK_SOCK_DIAG: socket: Permission denied: loopback clients are told apart by /proc/net/tcp" "$DAEMON_LOG")" 1 \
    "no netlink: said once in the log"
