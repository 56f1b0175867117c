# A real Prometheus (Debian's package) scrapes a daemon that warms a simulated disk,
# with the shipped rules (packaging/prometheus/prewarmd.rules.yml) loaded: the
# recording rule's value is 0 while the disk waits for its request and 1 once it is
# warm (cowsim agreeing: every block allocated), and every rule evaluates without
# error against the daemon's real metrics.
source "$(dirname "$0")/lib.sh"
require_devices
command -v prometheus >/dev/null || cannot_run "no prometheus (package prometheus)"

sim_up --disk a=256MiB
api_config
start_daemon '[discovery]
match = '"$(sim_match)"'
[prefill]
auto_prefill = "never"
total_rate = "unlimited"
'"$API_CONFIG"
wait_for_api
id=$(curl -s "$API/v1/disks" | jq -r --arg n "$(basename "$(dev_of a)")" '.disks[] | select(.name == $n) | .id')
[[ $id == loop-* ]] || fail "no loop disk listed: $(curl -s "$API/v1/disks")"

prom_port=$(test_port)
[[ $prom_port != "$API_PORT" ]] || prom_port=$((prom_port + 1))
prom=http://127.0.0.1:$prom_port
cat >"$TEST_DIR/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $PREWARMD_SRC/packaging/prometheus/prewarmd.rules.yml
scrape_configs:
  - job_name: prewarmd
    static_configs:
      - targets: ["127.0.0.1:$API_PORT"]
YAML
prometheus --config.file="$TEST_DIR/prometheus.yml" --storage.tsdb.path="$TEST_DIR/tsdb" \
    --web.listen-address="127.0.0.1:$prom_port" >"$TEST_DIR/prometheus.log" 2>&1 &
prom_pid=$!
on_cleanup "kill $prom_pid 2>/dev/null; wait $prom_pid 2>/dev/null || true"

# The value of the instant query EXPR, "" while it has none.
query() { curl -s --max-time 5 --get "$prom/api/v1/query" --data-urlencode "query=$1" |
    jq -r '.data.result[0].value[1] // empty' 2>/dev/null || true; }
wait_for_value() { # EXPR VALUE SECONDS
    local got=""
    for _ in $(seq $(($3 * 2))); do
        got=$(query "$1")
        [[ $got == "$2" ]] && { pass "prometheus: $1 = $got"; return 0; }
        kill -0 "$prom_pid" 2>/dev/null || fail "prometheus exited: $(tail -5 "$TEST_DIR/prometheus.log")"
        sleep 0.5
    done
    fail "prometheus: $1 is '$got', not $2 (its log: $(tail -3 "$TEST_DIR/prometheus.log"))"
}
ratio="instance:prewarmd_disks_warm:ratio{instance=\"127.0.0.1:$API_PORT\"}"
wait_for_value 'up{job="prewarmd"}' 1 30
wait_for_value "$ratio" 0 30

check_eq "$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $(api_token)" \
    "$API/v1/disks/$id/start")" 202 "the disk started"
wait_for_log "$(disk_pattern a): running -> warm" 60
check_eq "$(stat_of a blocks_allocated)" "$(stat_of a blocks_total)" "cowsim: every block allocated"
wait_for_value "$ratio" 1 30
wait_for_value 'prewarmd:disks_warm:ratio' 1 30
wait_for_value "prewarmd_disk_job_ends_total{disk=\"$id\",outcome=\"warm\"}" 1 30

# Every rule evaluated against the real series, none in error.
rules=$(curl -s "$prom/api/v1/rules")
check_eq "$(jq '[.data.groups[].rules[]] | length' <<<"$rules")" 6 "rules loaded"
check_eq "$(jq -r '[.data.groups[].rules[] | select(.health != "ok")] | length' <<<"$rules")" 0 \
    "rules in error ($(jq -c '[.data.groups[].rules[] | select(.health != "ok") | {name, lastError}]' <<<"$rules"))"
