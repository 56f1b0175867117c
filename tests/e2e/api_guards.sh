# The HTTP API's guards, with raw requests to a running daemon: smuggling, oversize
# and stalled requests, the token, the connection cap, the per-client rate limit;
# then how it refuses to start (a token file others may read, a short token) and
# TLS (1.2 at least). Who may read and change: api_access.sh.
source "$(dirname "$0")/lib.sh"
require_devices
[[ -x /usr/bin/python3 ]] || cannot_run "no /usr/bin/python3"
command -v openssl >/dev/null || cannot_run "no openssl"
raw() { /usr/bin/python3 "$PREWARMD_SRC/tests/api/raw_requests.py" "$@"; }

token=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s\n' "$token" >"$TEST_DIR/token"
chmod 600 "$TEST_DIR/token"
quiet='[discovery]
match = ["name:no-such-disk"]
[dbus]
enabled = false'

api_config
start_daemon "$quiet
$API_CONFIG
token_file = \"$TEST_DIR/token\"
rate_limit = 10000"
wait_for_api
raw table "$API_PORT" "$token" || fail "a bad request was not refused as it should be"
kill -0 "$DAEMON_PID" || fail "the daemon died"
pass "the daemon serves on after every bad request"
if grep -qF "$token" "$DAEMON_LOG"; then fail "the token is in the log"; fi
pass "the token is never logged"
stop_daemon

start_daemon "$quiet
$API_CONFIG
max_connections = 8
rate_limit = 5"
wait_for_api
sleep 2 # the readiness polls spent some of the rate
raw budget "$API_PORT" 2 8 || fail "a client's budget does not hold"
kill -0 "$DAEMON_PID" || fail "the daemon died"
peak=$(awk '/^VmHWM/ {print $2}' "/proc/$DAEMON_PID/status")
(( peak < 64 * 1024 )) || fail "the daemon's peak RSS under hostile clients: $peak KiB, over 64 MiB"
pass "the daemon's peak RSS under hostile clients: $((peak / 1024)) MiB"
sleep 2
raw rate "$API_PORT" 5 || fail "the rate limit does not hold"
stop_daemon

# Refusals to start: exit status 2 and a line that says why; `prewarmd config
# --check` refuses the same file, saying the same.
refuses() { # WHAT PATTERN CONFIG
    local what=$1 pattern=$2
    printf '%s\n' "$3" >"$TEST_DIR/refused.toml"
    run_status timeout 20 "$prewarmd" run --config "$TEST_DIR/refused.toml" \
        --state-dir "$TEST_DIR/state" >"$TEST_DIR/refused.log" 2>&1
    check_eq "$status" 2 "$what: exit status"
    grep -Eq "$pattern" "$TEST_DIR/refused.log" || fail "$what: no '$pattern' in: $(cat "$TEST_DIR/refused.log")"
    pass "$what: $(grep -Em1 "$pattern" "$TEST_DIR/refused.log" | cut -d' ' -f3-)"
    run_status "$prewarmd" config --check "$TEST_DIR/refused.toml" >"$TEST_DIR/checked.log" 2>&1
    check_eq "$status" 2 "$what: config --check's exit status"
    grep -Eq "$pattern" "$TEST_DIR/checked.log" || fail "$what: config --check: $(cat "$TEST_DIR/checked.log")"
}
chmod 644 "$TEST_DIR/token"
refuses "a token file others may read" "chmod 600" "$quiet
$API_CONFIG
token_file = \"$TEST_DIR/token\""
chmod 600 "$TEST_DIR/token"
printf 'short\n' >"$TEST_DIR/short-token"
chmod 600 "$TEST_DIR/short-token"
refuses "a token too short" "16 to 4096 characters" "$quiet
$API_CONFIG
token_file = \"$TEST_DIR/short-token\""
refuses "a certificate without its key" "tls_cert and tls_key go together" "$quiet
$API_CONFIG
tls_cert = \"$TEST_DIR/cert.pem\""

# TLS from a certificate and key; TLS 1.1 and plain HTTP are refused.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
    -addext subjectAltName=IP:127.0.0.1 -keyout "$TEST_DIR/key.pem" -out "$TEST_DIR/cert.pem" \
    2>/dev/null || fail "openssl cannot make a certificate"
chmod 600 "$TEST_DIR/key.pem"
start_daemon "$quiet
$API_CONFIG
tls_cert = \"$TEST_DIR/cert.pem\"
tls_key = \"$TEST_DIR/key.pem\""
https=https://127.0.0.1:$API_PORT
for _ in $(seq 50); do
    curl -sf --cacert "$TEST_DIR/cert.pem" "$https/readyz" >/dev/null && break
    sleep 0.1
done
check_eq "$(curl -s --cacert "$TEST_DIR/cert.pem" -o /dev/null -w '%{http_code}' "$https/v1/disks")" 200 \
    "GET over TLS"
check_eq "$(curl -s --cacert "$TEST_DIR/cert.pem" -o /dev/null -w '%{ssl_verify_result}' --tlsv1.2 --tls-max 1.2 "$https/healthz")" \
    0 "TLS 1.2 accepted, certificate verified"
run_status openssl s_client -connect "127.0.0.1:$API_PORT" -tls1_1 -cipher DEFAULT@SECLEVEL=0 </dev/null >"$TEST_DIR/tls11" 2>&1
[[ $status -ne 0 ]] && ! grep -q "^New, TLS" "$TEST_DIR/tls11" ||
    fail "a TLS 1.1 handshake succeeded: $(head -20 "$TEST_DIR/tls11")"
pass "TLS 1.1 refused"
run_status curl -s --max-time 5 -o /dev/null "http://127.0.0.1:$API_PORT/healthz"
[[ $status -ne 0 ]] || fail "plain HTTP answered on the TLS port"
pass "plain HTTP gets no answer on the TLS port"
kill -0 "$DAEMON_PID" || fail "the daemon died"
stop_daemon
