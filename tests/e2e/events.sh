# The webhooks, end to end, to a receiver that checks each signature from the
# Standard Webhooks specification alone (tests/tools/webhook_receiver.py), over
# HTTPS with a certificate of its own:
# - a receiver whose certificate the daemon cannot verify gets nothing; named in
#   ca_file by a reload, it gets what waited;
# - a job's end reaches the receiver within 10 s, signed;
# - the receiver down for 30 s, the daemon SIGKILLed meanwhile and its secret
#   rotated by a reload: every event still arrives, at least once, signed anew;
# - a receiver that hangs delays no job, no API request, and no stop.
source "$(dirname "$0")/lib.sh"
require_devices
command -v openssl >/dev/null || cannot_run "no openssl (package openssl)"

sim_up --disk a=256MiB --disk b=256MiB --disk c=256MiB --disk d=256MiB
api_config
receiver=$PREWARMD_SRC/tests/tools/webhook_receiver.py
port=$(test_port)
[[ $port != "$API_PORT" ]] || port=$((port + 1))
url=https://127.0.0.1:$port/hook
openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
    -days 1 -keyout "$TEST_DIR/receiver.key" -out "$TEST_DIR/receiver.pem" 2>/dev/null ||
    fail "openssl could not make the receiver's certificate"
(umask 077 && printf 'whsec_%s\n' "$(head -c 32 /dev/urandom | base64 -w0)" >"$TEST_DIR/secret")
received=$TEST_DIR/received.jsonl
: >"$received"

start_receiver() { # [--hang]
    python3 "$receiver" "$port" "$TEST_DIR/secret" "$received" "$TEST_DIR/receiver.pem" \
        "$TEST_DIR/receiver.key" "$@" >>"$TEST_DIR/receiver.log" 2>&1 &
    receiver_pid=$!
    on_cleanup "kill $receiver_pid 2>/dev/null || true"
    for _ in $(seq 50); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        sleep 0.1
    done
    fail "the receiver does not listen: $(cat "$TEST_DIR/receiver.log")"
}
stop_receiver() { kill "$receiver_pid"; wait "$receiver_pid" 2>/dev/null || true; }

config() { # [CA_FILE]
    printf '[discovery]\nmatch = %s\n[prefill]\nauto_prefill = "never"\ntotal_rate = "unlimited"\n' \
        "$(sim_match)"
    printf '[events]\nwebhook = ["%s"]\nsecret_file = "%s"\nca_file = "%s"\n%s\n' \
        "$url" "$TEST_DIR/secret" "${1:-}" "$API_CONFIG"
}
id_of() { curl -s "$API/v1/disks" | jq -r --arg n "$(basename "$(dev_of "$1")")" '.disks[] | select(.name == $n) | .id'; }
start_disk() {
    check_eq "$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $(api_token)" \
        "$API/v1/disks/$(id_of "$1")/start")" 202 "disk $1 started"
}
# Waits until the receiver has a valid event of TYPE for disk NAME.
wait_for_event() { # NAME TYPE SECONDS
    local id
    id=$(id_of "$1")
    for _ in $(seq $(($3 * 10))); do
        jq -se --arg s "$id" --arg t "org.prewarmd.disk.$2" 'any(.[]; .subject == $s and .type == $t and .valid)' \
            "$received" >/dev/null 2>&1 && { pass "received: $2 for disk $1"; return 0; }
        sleep 0.1
    done
    fail "no valid $2 event for disk $1 within $3 s; received: $(cat "$received"); log: $(grep webhook "$DAEMON_LOG" | tail -3)"
}

start_receiver
start_daemon "$(config)"
wait_for_api

# 1. A certificate it cannot verify: nothing is sent; the ca_file named by a reload.
start_disk a
wait_for_log "$(disk_pattern a): running -> warm" 60
wait_for_log "webhook $url: .*(certificate|SSL)" 20
check_eq "$(wc -l <"$received")" 0 "events the receiver got from a daemon that cannot verify it"
check_ge "$(curl -s "$API/metrics" | awk '$1 == "prewarmd_events_waiting" { print $2 }')" 2 "events waiting"
daemon_config "$(config "$TEST_DIR/receiver.pem")" >"$TEST_DIR/prewarmd.toml"
kill -HUP "$DAEMON_PID"
wait_for_event a started 40
wait_for_event a warm 40
check_eq "$(jq -r 'select(.valid | not) | .why' "$received" | head -1)" "" "every signature valid"
check_eq "$(jq -r 'select(.type == "org.prewarmd.disk.warm") | .source' "$received" | head -1)" \
    "prewarmd://$(cat /etc/machine-id 2>/dev/null || hostname)/disks/$(id_of a)" \
    "the event's source"
check_eq "$(jq -r 'select(.type == "org.prewarmd.disk.warm") | .data_state' "$received" | head -1)" warm \
    "the event's data: the disk as the API shows it"

# 2. A job's end, heard within 10 s.
start_disk b
wait_for_log "$(disk_pattern b): running -> warm" 60
wait_for_event b warm 10
latency=$(jq -r --arg s "$(id_of b)" 'select(.subject == $s and .type == "org.prewarmd.disk.warm") |
    "\(.received_ms) \(.time)"' "$received" | head -1 | python3 -c '
import datetime, sys
ms, t = sys.stdin.read().split()
sent = datetime.datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
print("%.3f" % (int(ms) / 1000 - sent.timestamp()))')
pass "delivery latency, the event's time to the receiver: $latency s"

# 3. The receiver down for 30 s, the daemon killed with the events still waiting.
stop_receiver
down_at=$(date +%s)
start_disk c
wait_for_log "$(disk_pattern c): running -> warm" 60
for _ in $(seq 50); do # c's start and end, kept for the receiver
    waiting=$(cat "$TEST_DIR"/state/outbox/*.json 2>/dev/null | jq -r .id | sort -u)
    (($(grep -c . <<<"$waiting") >= 2)) && break
    sleep 0.1
done
check_ge "$(wc -l <<<"$waiting")" 2 "events in the outbox before the kill"
pass "an outbox entry's size: $(du -b "$TEST_DIR"/state/outbox/*.json | awk '{ print $1 }' | sort -n | tail -1) bytes at most"
kill -KILL "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null || true
start_daemon "$(config "$TEST_DIR/receiver.pem")"
wait_for_api
# The secret rotated by a reload: what waited is signed with the new one.
reloads=$(grep -c "reload: " "$DAEMON_LOG")
(umask 077 && printf 'whsec_%s\n' "$(head -c 32 /dev/urandom | base64 -w0)" >"$TEST_DIR/secret")
kill -HUP "$DAEMON_PID"
for _ in $(seq 50); do
    (($(grep -c "reload: " "$DAEMON_LOG") > reloads)) && break
    sleep 0.1
done
(($(grep -c "reload: " "$DAEMON_LOG") > reloads)) || fail "no reload: $(tail -3 "$DAEMON_LOG")"
left=$((30 - ($(date +%s) - down_at)))
((left <= 0)) || sleep "$left"
start_receiver
for _ in $(seq 600); do
    missing=$(comm -23 <(echo "$waiting") <(jq -r 'select(.valid) | .id' "$received" | sort -u))
    [[ -z $missing ]] && break
    sleep 0.1
done
check_eq "$missing" "" "events that waited through the receiver's 30 s down and a kill -9, missing"
wait_for_event c warm 1

# 4. A receiver that hangs: the job, the API and the stop go on as without it.
stop_receiver
start_receiver --hang
start_disk d
wait_for_line "$received" '"held"' 20
wait_for_log "$(disk_pattern d): running -> warm" 60
for _ in $(seq 10); do
    code=$(curl -s -o /dev/null --max-time 2 -w '%{http_code}' "$API/v1/disks")
    [[ $code == 200 ]] || fail "the API, while the receiver hangs: $code"
done
pass "the API answered 10 requests within 2 s each while the receiver hung"
stopping=$(date +%s%N)
stop_daemon
check_le $((($(date +%s%N) - stopping) / 1000000)) 5000 "ms to stop, a delivery hanging"
