#!/usr/bin/env bash
# packaging/prometheus/prewarmd.rules.yml through promtool: `check rules` (syntax,
# PromQL, templates) and `test rules` (its unit tests, prewarmd.rules.test.yml).
# promtool comes with Debian's package prometheus (scripts/apt-packages.txt).
source "$(dirname "$0")/../e2e/lib.sh" # cannot_run, fail, pass
command -v promtool >/dev/null || cannot_run "no promtool (package prometheus)"
dir=$PREWARMD_SRC/packaging/prometheus
out=$(promtool check rules "$dir/prewarmd.rules.yml" 2>&1) || fail "promtool check rules: $out"
pass "promtool check rules: $(grep -o '[0-9]* rules found' <<<"$out")"
out=$(cd "$dir" && promtool test rules prewarmd.rules.test.yml 2>&1) || fail "promtool test rules: $out"
pass "promtool test rules: the rules' unit tests pass"
