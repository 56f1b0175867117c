# An accept that fails (ENOBUFS, once: tests/tools/net_fault.cc) does not end a
# listener. cpp-httplib then closes the socket it accepts on; the daemon gave it
# a copy of its own, and listens again 1 s later: the request made meanwhile is
# answered, and so are those after, over TCP and over the unix socket alike.
source "$(dirname "$0")/lib.sh"
lib=$PREWARMD_BIN/libnet_fault.so
[[ -f $lib ]] || fail "no $lib (the build makes it)"

api_config
fault=$TEST_DIR/fault
daemon_config '[discovery]
match = ["name:no-such-disk"]' >"$TEST_DIR/prewarmd.toml"
DAEMON_LOG=$TEST_DIR/daemon.log
PREWARMD_ACCEPT_FAULT=$fault LD_PRELOAD=$lib "$prewarmd" run --config "$TEST_DIR/prewarmd.toml" \
    --state-dir "$TEST_DIR/state" >>"$DAEMON_LOG" 2>&1 &
DAEMON_PID=$!
on_cleanup "stop_daemon"
wait_for_api

# One listener, then the other: the next accept fails; the request still gets its answer.
faulted() { # WHAT CURL-ARGS...
    local what=$1
    shift
    touch "$fault"
    curl -sf --max-time 10 "$@" >/dev/null ||
        fail "$what: the request made while its accept failed was not answered: $(tail -5 "$DAEMON_LOG")"
    [[ ! -e $fault ]] || fail "$what: no accept was made to fail"
    pass "$what: answered after a failed accept"
    for i in 1 2 3; do
        curl -sf --max-time 5 "$@" >/dev/null || fail "$what: request $i after it was not answered"
    done
    pass "$what: 3 requests after it answered"
}
faulted "TCP" "$API/v1/settings"
wait_for_log "api: 127\.0\.0\.1:$API_PORT: an accept failed \(No buffer space available\): listening again in 1 s"
faulted "the unix socket" --unix-socket "$API_SOCKET" http://x/v1/settings
wait_for_log "api: unix:$API_SOCKET: an accept failed \(No buffer space available\): listening again in 1 s"
curl -sf --max-time 5 "$API/v1/settings" >/dev/null || fail "TCP after both"
pass "TCP answers still"
