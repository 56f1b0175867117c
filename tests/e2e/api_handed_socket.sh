# The API's TCP port held by systemd (prewarmd.socket, here a stand-in that holds it
# the same way): the daemon serves the socket it is handed instead of binding the
# port; while it restarts, the user nobody cannot take the port, and a request made
# meanwhile waits and is answered by the next start, the token working throughout.
# A handed socket that [api] listen does not name is not served, and said so.
source "$(dirname "$0")/lib.sh"
[[ -x /usr/bin/python3 ]] || cannot_run "no /usr/bin/python3"
command -v setpriv >/dev/null || cannot_run "no setpriv (util-linux)"
[[ $(id -u) == 0 ]] || cannot_run "needs root to act as the user nobody"

api_config
daemon_config '[discovery]
match = ["name:no-such-disk"]' >"$TEST_DIR/prewarmd.toml"
DAEMON_LOG=$TEST_DIR/daemon.log
/usr/bin/python3 "$PREWARMD_SRC/tests/api/socket_holder.py" "$API_PORT" "$TEST_DIR/go" \
    "$TEST_DIR/daemon.pid" -- "$PREWARMD_BIN/prewarmd" run --config "$TEST_DIR/prewarmd.toml" \
    --state-dir "$TEST_DIR/state" >>"$DAEMON_LOG" 2>&1 &
DAEMON_PID=$! # the holder: stop_daemon's SIGTERM ends the daemon, then it
on_cleanup "stop_daemon"

# The running daemon's pid, once it runs: the holder's child.
daemon_pid() {
    for _ in $(seq 100); do
        [[ -s $TEST_DIR/daemon.pid ]] && { cat "$TEST_DIR/daemon.pid"; return; }
        sleep 0.1
    done
    fail "the holder did not start the daemon: $(tail -5 "$DAEMON_LOG")"
}
stop_one() { # PID: SIGTERM, and wait until it is gone
    kill -TERM "$1"
    for _ in $(seq 150); do
        kill -0 "$1" 2>/dev/null || return 0
        sleep 0.1
    done
    fail "the daemon $1 did not stop on SIGTERM"
}
squat() { # as nobody: 0 if it could bind the port
    setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c '
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
    s.listen(8)
except OSError as e:
    print(e)
    sys.exit(1)' "$API_PORT"
}

wait_for_log "api: listening on 127.0.0.1:$API_PORT \(the socket systemd holds\)"
wait_for_api
TOKEN=$(api_token)
check_eq "$(curl -s -o /dev/null -w '%{http_code}' -X PATCH -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' -d '{"total_rate_bytes_per_s": 67108864}' "$API/v1/settings")" 200 \
    "a change with the token, on the handed socket"

first=$(daemon_pid)
stop_one "$first"
wait_for_log "stopped"
if out=$(squat 2>&1); then fail "nobody bound 127.0.0.1:$API_PORT while the daemon was stopped"; fi
pass "while the daemon is stopped, nobody cannot bind the port: $out"
curl -s -o "$TEST_DIR/waited" -w '%{http_code}' --max-time 60 -X PATCH \
    -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    -d '{"total_rate_bytes_per_s": 33554432}' "$API/v1/settings" >"$TEST_DIR/waited.code" &
waiter=$!
sleep 1
kill -0 "$waiter" 2>/dev/null || fail "a request while the daemon was stopped did not wait: $(cat "$TEST_DIR/waited.code")"
pass "a request made while the daemon is stopped waits in the backlog"
touch "$TEST_DIR/go"
wait "$waiter" || true
check_eq "$(cat "$TEST_DIR/waited.code")" 200 "that request, answered by the next start"
second=$(daemon_pid)
[[ $second != "$first" ]] || fail "the same daemon answered"
check_eq "$(curl -sf "$API/v1/settings" | jq -r .total_rate_bytes_per_s)" $((32 << 20)) \
    "the change it made, in force"

# A socket [api] listen does not name: said so, and not served; the daemon binds what
# it names itself.
other=$((API_PORT + 1))
sed -i "s/127.0.0.1:$API_PORT/127.0.0.1:$other/" "$TEST_DIR/prewarmd.toml"
stop_one "$second"
touch "$TEST_DIR/go"
wait_for_log "systemd passed a socket on 127.0.0.1:$API_PORT that \[api\] listen does not name: not served"
wait_for_log "api: listening on 127.0.0.1:$other$"
API=http://127.0.0.1:$other wait_for_api
stop_daemon
