#!/usr/bin/env bash
# pnpm bench <gateway|signals|stats|webhooks|neighbours|deliveries|stream|key-path|logins> [options] (and pnpm chaos [options]): builds, brings up the local
# infrastructure (stopping what it started afterwards) and runs one benchmark. Every benchmark
# prints its figures beside a baseline measured in the same run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
name="${1:-}"; shift || true
case "$name" in gateway|signals|stats|webhooks|neighbours|deliveries|stream|key-path|logins|chaos) ;; *) echo "usage: pnpm bench <gateway|signals|stats|webhooks|neighbours|deliveries|stream|key-path|logins> [--options]" >&2; exit 2 ;; esac
source scripts/lib/toolchain.sh
pnpm install --frozen-lockfile --reporter=append-only >/dev/null
pnpm run -s build
if [ "$name" = gateway ] && ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ] && [ "$(id -u)" = 0 ]; then
  (apt-get install -y -q nginx-light >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q nginx-light >/dev/null 2>&1; }) || echo "nginx not installable; (c) will be skipped" >&2
fi
# The benches' own MongoDB-wire server and database (instance "bench"): a bench beside a running
# `bash scripts/up.sh` or a test run in this checkout neither uses nor stops theirs.
export INFRA_INSTANCE=bench
# The key path's steps run in one process without servers.
if [ "$name" != key-path ]; then
  trap 'infra/local/infra.sh down >/dev/null 2>&1 || true' EXIT
  set -a; eval "$(infra/local/infra.sh up 2>/dev/null)"; set +a
fi
mkdir -p bench-results
script="infra/bench/dist/$name.bench.js"; [ "$name" = chaos ] && script="infra/bench/dist/chaos.js"
# --expose-gc: each timed row starts with the load generator's own garbage collected.
node --expose-gc "$script" "$@" 2>&1 | tee "bench-results/$name.txt"
