#!/usr/bin/env bash
# The one test command (README "Quick start"): sets up everything it needs on a fresh machine —
# Node 24 when the machine's node is older, pnpm, dependencies, build, Redis/RabbitMQ/MongoDB-wire
# server, the browser — runs lint, typecheck, the three test tiers (unit, integration, system)
# and the short chaos run with the webhooks worker at the recorded release, then stops what it
# started. Prints each stage's time.
#   bash scripts/test.sh                  everything
#   bash scripts/test.sh <jest args...>   build, lint, typecheck and jest with those arguments (no chaos)
#   JEST_WORKERS=2 bash scripts/test.sh   the integration and system tiers on two workers
#                                         (default 3: fewest CPU-seconds for the shortest run on two
#                                         cores, docs/development.md "The test command")
# Its infrastructure is the "test" instance of infra/local/infra.sh: its own MongoDB-wire server
# and database, beside (never instead of) a system that `bash scripts/up.sh` runs in this checkout.
#
# On two cores the run is laid out so the critical path (install → build → integration and
# system tests, then the short chaos run) never waits for anything else: the infrastructure
# and the browser install start first, the other Go builds (oasdiff, the Kubernetes check)
# after FerretDB's; the unit tier runs beside the build;
# the tests' typecheck and lint run (niced) beside the integration and system tiers, which run
# as one jest run so its workers take whichever file is next, the slowest first
# (test/slow-first-sequencer.js).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
started=$(date +%s)
mkdir -p .run/artifacts .run/logs
rm -f .run/jest-*.json .run/logs/*.secs
timings=()
step_started=$started
step() { # name: closes the previous step's timing and opens this one
  local now; now=$(date +%s)
  [ -n "${step_name:-}" ] && timings+=("$step_name $((now - step_started))s")
  step_name=$1; step_started=$now
  echo "==> $1"
}
# A job beside the steps: its output in .run/logs/<name>.log, its seconds in .run/logs/<name>.secs.
beside() { # name command...
  local name=$1; shift
  (
    t0=$(date +%s); rc=0
    "$@" >".run/logs/$name.log" 2>&1 || rc=$?
    echo "$(($(date +%s) - t0))" >".run/logs/$name.secs"
    exit $rc
  ) &
}
# Waits for a job started by `beside`; prints its log when it failed. Returns its status.
settle() { # name pid
  local rc=0
  wait "$2" || rc=$?
  if [ $rc -ne 0 ]; then cat ".run/logs/$1.log"; echo "$1 failed" >&2; fi
  timings+=("$1 $(cat ".run/logs/$1.secs" 2>/dev/null || echo '?')s(beside)")
  return $rc
}
status=0

step toolchain
source scripts/lib/toolchain.sh

# The infrastructure (on a fresh machine: building the FerretDB wrapper, a minute or two), the
# Go tools after it and the browser's install (network) need neither the dependencies nor the
# build: they start first.
# The infrastructure is stopped at the end only when this run started some of it: a test
# instance already up (a developer's `infra/local/infra.sh up`) stays up.
: >.run/logs/infra.log
INFRA_ASYNC_COMMIT=1 infra/local/infra.sh up >.run/logs/infra.env 2>.run/logs/infra.log & infra_pid=$!
stop_infra() {
  wait "$infra_pid" 2>/dev/null || true
  if grep -q ': started' .run/logs/infra.log; then infra/local/infra.sh down || true
  else echo "test infrastructure was already up: left running"; fi
}
trap stop_infra EXIT
# On a cold machine the Go builds are one at a time, FerretDB's first (the tests wait for it):
# builds with the same flags share what they compile in Go's build cache (the standard library
# alone is ~75 CPU-seconds), and builds run at once each compile it again. Then oasdiff (the
# integration tier's breaking-change check builds it itself, under a lock, if it gets there
# first) and, niced, the Kubernetes manifests' check, without `go vet`: vetting a test module
# vets every package it imports (k8s.io/api, kustomize), ~40 CPU-seconds cold for 1,500 lines of
# our own Go. Cold, 288 CPU-seconds in all instead of 493 (docs/development.md); warm, cache hits.
k8s_pid=""
if command -v go >/dev/null || [ -x /usr/local/go/bin/go ]; then
  go_after_infra() {
    while kill -0 "$infra_pid" 2>/dev/null; do sleep 1; done
    infra/oasdiff/oasdiff.sh >/dev/null || echo "oasdiff did not build: the breaking-change check builds it again and says why"
    (cd infra/k8s/validate && PATH="$PATH:/usr/local/go/bin" nice go test -vet=off -count=1 ./...)
  }
  beside k8s go_after_infra
  k8s_pid=$!
fi
# The dashboard's browser tests drive Debian's Chromium headless shell with playwright-core (no
# browser download): half the full browser's processor time for the same tests.
browser_pid=""
if [ ! -x /usr/bin/chromium-headless-shell ]; then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  beside browser-install bash -c "$sudo_cmd apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq chromium-headless-shell"
  browser_pid=$!
fi

# The recorded release's webhooks build (the chaos run's worker: ~30 CPU-seconds) is built once
# per machine into the user's cache, niced beside the build and the tiers.
compat_prepare_pid=""
if [ $# -eq 0 ]; then
  nice infra/compat/release.sh services/webhooks >.run/logs/compat-prepare.log 2>&1 & compat_prepare_pid=$!
fi

step dependencies
pnpm install --frozen-lockfile --reporter=append-only >/dev/null

# One line per tier from a jest JSON report (a file under test/ or a browser test is the system
# tier's, any other the integration tier's, unless the report is one tier's), and its slowest files.
tier_lines() { # report seconds [tier]
  node -e '
    const path = require("path");
    const [file, seconds, only] = process.argv.slice(1);
    const r = require(file);
    const tierOf = (name) => only || (/\.browser\.test\.ts$/.test(name) || path.relative(process.cwd(), name).startsWith("test/") ? "system" : "integration");
    const tiers = new Map();
    for (const t of r.testResults) {
      const c = tiers.get(tierOf(t.name)) ?? { passed: 0, failed: 0, skipped: 0 };
      for (const a of t.assertionResults) {
        if (a.status === "passed") c.passed++; else if (a.status === "failed") c.failed++; else c.skipped++;
      }
      if (t.assertionResults.length === 0 && t.status === "failed") c.failed++;
      tiers.set(tierOf(t.name), c);
    }
    for (const [tier, c] of tiers) console.log(`jest ${tier}: ${c.passed} passed, ${c.failed} failed, ${c.skipped} skipped`);
    const slow = r.testResults.map((t) => [(t.endTime - t.startTime) / 1000, path.relative(process.cwd(), t.name)]);
    slow.sort((a, b) => b[0] - a[0]);
    console.log(`in ${seconds} s; slowest files: ${slow.slice(0, 8).map(([s, n]) => `${n} ${s.toFixed(0)} s`).join(", ")}`);
  ' "$PWD/$1" "$2" "${3:-}" || true
}
jest_run() { # report-name [jest args...]
  local report=$1; shift
  local t0; t0=$(date +%s)
  local rc=0
  pnpm exec jest --ci --json --outputFile=".run/jest-$report.json" "$@" || rc=$?
  [ -f ".run/jest-$report.json" ] && tier_lines ".run/jest-$report.json" "$(($(date +%s) - t0))"
  return $rc
}

step "build (unit tier beside it)"
# The unit tier needs neither a build nor infrastructure: it runs beside the build, on one worker,
# niced like the typecheck and lint, so the build and then the integration and system tiers (the
# critical path) keep the processor they ask for; it has the whole of those tiers to finish in.
unit_pid=""
if [ $# -eq 0 ]; then
  beside unit nice -n 19 pnpm exec jest --ci --selectProjects unit --maxWorkers=1 --json --outputFile=.run/jest-unit.json
  unit_pid=$!
fi
pnpm run -s build || { echo "build failed" >&2; exit 1; }

step infrastructure
wait "$infra_pid" || { cat .run/logs/infra.log; echo "infrastructure did not start" >&2; exit 1; }
cat .run/logs/infra.log
set -a; eval "$(cat .run/logs/infra.env)"; set +a
if [ -n "$browser_pid" ]; then settle browser-install "$browser_pid" || exit 1; fi

# The tests' typecheck (the sources were checked by the build) and lint: single-threaded tools,
# niced so the tests they run beside keep the processor they ask for.
beside typecheck nice -n 19 pnpm exec tsc -p tsconfig.test.json --noEmit; typecheck_pid=$!
beside lint nice -n 19 pnpm exec eslint . --max-warnings 0; lint_pid=$!

if [ $# -gt 0 ]; then
  step "tests: $*"
  pnpm exec jest --ci --maxWorkers="${JEST_WORKERS:-2}" "$@" || status=$?
else
  step "tests: integration + system"
  jest_run integration-system --selectProjects integration system --maxWorkers="${JEST_WORKERS:-3}" || status=1
fi
settle typecheck "$typecheck_pid" || status=1
settle lint "$lint_pid" || status=1
if [ -n "$unit_pid" ]; then
  settle unit "$unit_pid" || status=1
  grep -E '^(FAIL|  ●)' .run/logs/unit.log || true
  [ -f .run/jest-unit.json ] && tier_lines .run/jest-unit.json "$(cat .run/logs/unit.secs)" unit
fi
if [ -n "$k8s_pid" ]; then
  if settle k8s "$k8s_pid"; then grep -v '^go: downloading' .run/logs/k8s.log || true; else status=1; fi
else
  echo "go not found: infra/k8s manifest validation skipped (needs Go >= 1.24)"
fi

if [ $# -eq 0 ]; then
  # The short chaos run (docs/operations.md "Chaos"): two replicas of every deployable, one of each
  # SIGKILLed and each dependency cut through TCP proxies under load. Alone, after jest, so no
  # other test's load blurs it.
  # One run proves the faults and the version boundary together: the webhooks worker runs from
  # the recorded release (releases/previous, docs/operations.md "Mixed versions") beside
  # everything else at HEAD; `pnpm compat` runs all five combinations and the rolling upgrade.
  step "chaos (short, webhooks worker at the release)"
  if wait "$compat_prepare_pid"; then
    node infra/bench/dist/chaos.js --short --out .run/artifacts/chaos.json \
      --release "$(infra/compat/release.sh services/webhooks)" --at-release webhooks-worker || status=1
  else
    cat .run/logs/compat-prepare.log; echo "compat: the release did not build" >&2; status=1
  fi
fi
step done
echo "times: ${timings[*]}"
# One closing line over every tier that ran: "total: N passed, N failed".
node -e '
  const fs = require("fs");
  let passed = 0, failed = 0;
  for (const f of fs.readdirSync(".run").filter((f) => /^jest-.*\.json$/.test(f))) {
    const r = JSON.parse(fs.readFileSync(`.run/${f}`, "utf8"));
    passed += r.numPassedTests; failed += r.numFailedTests + r.numRuntimeErrorTestSuites;
  }
  console.log(`total: ${passed} passed, ${failed} failed`);
' || true
echo "==> done in $(( $(date +%s) - started ))s"
exit $status
