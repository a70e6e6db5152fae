#!/usr/bin/env bash
# The flake hunt (docs/development.md "Tests"): the integration and system tiers N times in a row
# (default 5) while a CPU hog keeps every core busy, stopping at the first failure and naming the
# failed tests. A test that fails here waits on the clock somewhere: it is fixed or removed with
# a note, never retried.
#   pnpm test:stress [N] [jest args...]      e.g. pnpm test:stress 2, pnpm test:stress 3 services/stats
#   STRESS_HOGS=4 pnpm test:stress           more hog processes (default: one per core)
#   JEST_WORKERS=2 pnpm test:stress          jest workers (default 3, as scripts/test.sh)
# Builds first and uses the checkout's test infrastructure (infra/local/infra.sh up; stopped at the
# end when this run started it).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib/toolchain.sh
runs=${1:-5}; [ $# -gt 0 ] && shift
mkdir -p .run/logs

pnpm run -s build
infra/local/infra.sh up >.run/infra.env.stress 2>.run/logs/stress-infra.log \
  || { cat .run/logs/stress-infra.log; exit 1; }
set -a; eval "$(cat .run/infra.env.stress)"; set +a
rm -f .run/infra.env.stress

hogs=()
cleanup() {
  for pid in "${hogs[@]}"; do kill "$pid" 2>/dev/null || true; done
  if grep -q ': started' .run/logs/stress-infra.log; then infra/local/infra.sh down >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
for _ in $(seq "${STRESS_HOGS:-$(nproc)}"); do
  node -e 'for (;;) {}' &
  hogs+=($!)
done
echo "==> ${#hogs[@]} CPU hogs running (pids ${hogs[*]}); load average: $(cut -d' ' -f1-3 /proc/loadavg)"

started=$(date +%s)
for run in $(seq "$runs"); do
  t0=$(date +%s)
  echo "==> stress run $run of $runs"
  rc=0
  pnpm exec jest --ci --selectProjects integration system --json --outputFile=.run/jest-stress.json \
    --maxWorkers="${JEST_WORKERS:-3}" "$@" >".run/logs/stress-$run.log" 2>&1 || rc=$?
  node -e '
    const r = require(process.argv[1]);
    console.log(`run ${process.argv[2]}: ${r.numPassedTests} passed, ${r.numFailedTests} failed in ${process.argv[3]} s (load average ${process.argv[4]})`);
    for (const f of r.testResults) {
      for (const a of f.assertionResults.filter((a) => a.status === "failed"))
        console.log(`FAILED ${require("path").relative(process.cwd(), f.name)} › ${a.fullName}`);
      if (f.assertionResults.length === 0 && f.status === "failed")
        console.log(`FAILED ${require("path").relative(process.cwd(), f.name)}: ${f.message.split("\n").slice(0, 5).join(" ")}`);
    }
  ' "$PWD/.run/jest-stress.json" "$run" "$(($(date +%s) - t0))" "$(cut -d' ' -f1-3 /proc/loadavg)" || true
  if [ $rc -ne 0 ]; then
    echo "==> stress run $run failed: the whole output is in .run/logs/stress-$run.log" >&2
    exit 1
  fi
done
echo "==> $runs stress runs passed in $(($(date +%s) - started)) s"
