#!/usr/bin/env bash
# The one test command (README "Quick start"): sets up everything it needs on a fresh machine —
# Node 24 when the machine's node is older, pnpm, dependencies, build, Redis/RabbitMQ/MongoDB-wire
# server — runs lint, typecheck and every test, then stops what it started.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib/toolchain.sh
started=$(date +%s)

echo "==> dependencies"
pnpm install --frozen-lockfile --reporter=append-only >/dev/null
echo "==> build + typecheck"
pnpm run -s typecheck
echo "==> lint"
pnpm run -s lint
echo "==> kubernetes manifests"
if command -v go >/dev/null || [ -x /usr/local/go/bin/go ]; then
  (cd infra/k8s/validate && PATH="$PATH:/usr/local/go/bin" go test -count=1 ./...)
else
  echo "go not found: infra/k8s manifest validation skipped (needs Go >= 1.24)"
fi

echo "==> infrastructure"
trap 'infra/local/infra.sh down || true' EXIT
set -a; eval "$(infra/local/infra.sh up)"; set +a

echo "==> browser"
# The dashboard's browser test drives Debian's chromium with playwright-core (no browser download).
if [ ! -x /usr/bin/chromium ]; then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq chromium >/dev/null
fi

echo "==> tests"
mkdir -p .run/artifacts
status=0
pnpm exec jest --ci --json --outputFile=.run/jest-result.json "$@" || status=$?
node -e '
  const r = require("./.run/jest-result.json");
  console.log(`jest: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests} skipped`);
' || true

# The short chaos run (docs/operations.md "Chaos"): services SIGKILLed and dependencies cut through TCP
# proxies under load. Alone, after jest, so no other test's load blurs it; skipped when this
# script was asked for particular tests.
if [ $# -eq 0 ]; then
  echo "==> chaos (short)"
  node infra/bench/dist/chaos.js --short --out .run/artifacts/chaos.json || status=1
fi
echo "==> done in $(( $(date +%s) - started ))s"
exit $status
