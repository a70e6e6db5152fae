#!/usr/bin/env bash
# The one test command (README "Quick start"): sets up everything it needs on a fresh machine —
# Node 24 when the machine's node is older, pnpm, dependencies, build, Redis/RabbitMQ/MongoDB-wire
# server, the browser — runs lint, typecheck, the three test tiers (unit, integration, system),
# the short chaos run and one mixed-version run, then stops what it started. Prints each step's time.
#   bash scripts/test.sh                  everything
#   bash scripts/test.sh <jest args...>   lint, typecheck and jest with those arguments (no chaos)
#   JEST_WORKERS=1 bash scripts/test.sh   jest on one worker (a machine busy with other work)
# Its infrastructure is the "test" instance of infra/local/infra.sh: its own MongoDB-wire server
# and database, beside (never instead of) a system that `bash scripts/up.sh` runs in this checkout.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib/toolchain.sh
started=$(date +%s)
mkdir -p .run/artifacts .run/logs
rm -f .run/jest-unit.json .run/jest-integration.json .run/jest-system.json
timings=()
step_started=$started
step() { # name: closes the previous step's timing and opens this one
  local now; now=$(date +%s)
  [ -n "${step_name:-}" ] && timings+=("$step_name $((now - step_started))s")
  step_name=$1; step_started=$now
  echo "==> $1"
}
status=0

step dependencies
pnpm install --frozen-lockfile --reporter=append-only >/dev/null

# The dashboard's browser test drives Debian's chromium with playwright-core (no browser
# download). Its install waits on the network, so it runs beside the build, lint and tests
# before the system tier.
browser_pid=""
if [ ! -x /usr/bin/chromium ]; then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  ( $sudo_cmd apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq chromium ) \
    >.run/logs/browser-install.log 2>&1 &
  browser_pid=$!
fi

# The infrastructure (on a fresh machine: building the FerretDB wrapper, a minute or two) and the
# Kubernetes manifests' check (Go modules to fetch and compile: a minute or two) start now too,
# beside the build, lint and tests; the check's result is read after the system tier.
# Stopped at the end only when this run started some of it: a test instance already up (a
# developer's `infra/local/infra.sh up`) stays up.
: >.run/logs/infra.log
infra/local/infra.sh up >.run/logs/infra.env 2>.run/logs/infra.log & infra_pid=$!
stop_infra() {
  wait "$infra_pid" 2>/dev/null || true
  if grep -q ': started' .run/logs/infra.log; then infra/local/infra.sh down || true
  else echo "test infrastructure was already up: left running"; fi
}
trap stop_infra EXIT
k8s_pid=""
k8s_result() {
  step "kubernetes manifests"
  if [ -n "$k8s_pid" ]; then
    wait "$k8s_pid" || { cat .run/logs/k8s.log; echo "kubernetes manifests: check failed" >&2; status=1; return; }
    grep -v '^go: downloading' .run/logs/k8s.log || true
  else
    echo "go not found: infra/k8s manifest validation skipped (needs Go >= 1.24)"
  fi
}
if command -v go >/dev/null || [ -x /usr/local/go/bin/go ]; then
  (cd infra/k8s/validate && PATH="$PATH:/usr/local/go/bin" go test -count=1 ./...) >.run/logs/k8s.log 2>&1 &
  k8s_pid=$!
fi

# ---- contracts and compat: prepared beside the rest ----
# oasdiff (the integration tier's breaking-change check) and the recorded release's webhooks
# build (the compat step after chaos) are built once per machine into the user's cache; on a cold
# machine that takes a minute or two, started now beside the build and the unit tier.
compat_prepare() {
  infra/oasdiff/oasdiff.sh >/dev/null
  if [ "$1" -eq 0 ]; then infra/compat/release.sh services/webhooks >/dev/null; fi
}
compat_prepare $# >.run/logs/compat-prepare.log 2>&1 & compat_prepare_pid=$!
# ---- end contracts and compat ----

# The unit tier needs neither a build nor infrastructure: it runs first, for the quickest word.
jest_tier() { # tier [jest args...]
  local tier=$1; shift
  local t0; t0=$(date +%s)
  local rc=0
  pnpm exec jest --ci --selectProjects "$tier" ${JEST_WORKERS:+--maxWorkers=$JEST_WORKERS} \
    --json --outputFile=".run/jest-$tier.json" "$@" || rc=$?
  node -e '
    const r = require(process.argv[1]);
    console.log(`jest ${process.argv[2]}: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests} skipped in ${process.argv[3]} s`);
  ' "$PWD/.run/jest-$tier.json" "$tier" "$(($(date +%s) - t0))" || true
  return $rc
}
if [ $# -eq 0 ]; then
  step "tests: unit"
  jest_tier unit || status=1
fi

step "build + typecheck, lint (side by side)"
# Two single-threaded tools on a machine of two cores or more: side by side.
pnpm run -s typecheck >.run/logs/typecheck.log 2>&1 & typecheck_pid=$!
pnpm run -s lint >.run/logs/lint.log 2>&1 & lint_pid=$!
wait $typecheck_pid || { cat .run/logs/typecheck.log; echo "typecheck failed" >&2; exit 1; }
wait $lint_pid || { cat .run/logs/lint.log; echo "lint failed" >&2; exit 1; }

step infrastructure
wait "$infra_pid" || { cat .run/logs/infra.log; echo "infrastructure did not start" >&2; exit 1; }
cat .run/logs/infra.log
set -a; eval "$(cat .run/logs/infra.env)"; set +a

if [ $# -gt 0 ]; then
  step "tests: $*"
  [ -n "$browser_pid" ] && { wait "$browser_pid" || { cat .run/logs/browser-install.log; exit 1; }; }
  pnpm exec jest --ci ${JEST_WORKERS:+--maxWorkers=$JEST_WORKERS} "$@" || status=$?
  k8s_result
else
  step "tests: integration"
  jest_tier integration || status=1
  step "browser"
  [ -n "$browser_pid" ] && { wait "$browser_pid" || { cat .run/logs/browser-install.log; exit 1; }; }
  step "tests: system"
  jest_tier system || status=1
  k8s_result
  # The short chaos run (docs/operations.md "Chaos"): two replicas of every deployable, one of each SIGKILLed
  # and each dependency cut through TCP proxies under load. Alone, after jest, so no other
  # test's load blurs it.
  step "chaos (short)"
  node infra/bench/dist/chaos.js --short --out .run/artifacts/chaos.json || status=1
  # ---- compat: one deployable at the recorded release (docs/operations.md "Mixed versions") ----
  # The webhooks worker of releases/previous beside everything else at HEAD, under the chaos
  # load and checks; `pnpm compat` runs all five and the rolling upgrade.
  step "compat (webhooks worker at the release)"
  if wait "$compat_prepare_pid"; then
    node infra/bench/dist/compat.js --release "$(infra/compat/release.sh services/webhooks)" \
      --only webhooks-worker --no-rolling --seconds 10 --out .run/artifacts/compat.json || status=1
  else
    cat .run/logs/compat-prepare.log; echo "compat: oasdiff or the release did not build" >&2; status=1
  fi
  # ---- end compat ----
fi
step done
echo "times: ${timings[*]}"
# One closing line over every tier that ran: "total: N passed, N failed".
node -e '
  const fs = require("fs");
  let passed = 0, failed = 0;
  for (const tier of ["unit", "integration", "system"]) {
    const f = `.run/jest-${tier}.json`;
    if (!fs.existsSync(f)) continue;
    const r = JSON.parse(fs.readFileSync(f, "utf8"));
    passed += r.numPassedTests; failed += r.numFailedTests;
  }
  console.log(`total: ${passed} passed, ${failed} failed`);
' || true
echo "==> done in $(( $(date +%s) - started ))s"
exit $status
