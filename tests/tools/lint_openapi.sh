#!/usr/bin/env bash
# api/openapi.yaml through Redocly CLI's lint with its recommended rules
# (api/redocly.yaml): no error and no warning. The tool comes from the npm
# registry, at one version, into a cache kept between runs (PREWARMD_NPM_CACHE,
# default /var/cache/prewarmd-tests/redocly); without Node.js 20.19 or later and
# npm it cannot run, and fails saying so (PREWARMD_ALLOW_SKIP=1: skipped).
source "$(dirname "$0")/../e2e/lib.sh" # cannot_run, fail, pass
src=$PREWARMD_SRC
version=2.77.0
dir=${PREWARMD_NPM_CACHE:-/var/cache/prewarmd-tests/redocly}-$version
command -v node >/dev/null && command -v npm >/dev/null || cannot_run "no node and npm"
redocly=$dir/node_modules/.bin/redocly
if [[ ! -x $redocly ]]; then
    mkdir -p "$dir"
    npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "@redocly/cli@$version" >&2 ||
        cannot_run "npm install @redocly/cli@$version failed (is the npm registry reachable?)"
fi
out=$(NO_UPDATE_NOTIFIER=1 REDOCLY_TELEMETRY=off "$redocly" lint --config "$src/api/redocly.yaml" \
    --format=stylish "$src/api/openapi.yaml" 2>&1) || fail "redocly lint: $out"
echo "$out" | sed -n '/validating/,$p'
! grep -Eq '^ +[0-9]+:[0-9]+ +(error|warning) ' <<<"$out" ||
    fail "redocly lint: warnings (fix them, or say why one stays in api/redocly.yaml)"
pass "api/openapi.yaml passes redocly lint $version, recommended rules, no warning"
