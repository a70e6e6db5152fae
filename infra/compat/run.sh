#!/usr/bin/env bash
# pnpm compat [options]: builds this checkout and the recorded release (releases/previous, in a
# worktree under .run/compat/), brings up the local infrastructure (its own "compat" instance,
# stopped afterwards when this run started it) and runs infra/bench/dist/compat.js: each
# deployable at the release beside the rest at HEAD, then a rolling upgrade under load.
# Options go to compat.js (--only, --no-rolling, --seconds, --rolling-seconds, --out).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source scripts/lib/toolchain.sh
pnpm install --frozen-lockfile --reporter=append-only >/dev/null
pnpm run -s build
release="$(infra/compat/release.sh)"
export INFRA_INSTANCE=compat
trap 'infra/local/infra.sh down >/dev/null 2>&1 || true' EXIT
set -a; eval "$(infra/local/infra.sh up 2>/dev/null)"; set +a
mkdir -p bench-results
node infra/bench/dist/compat.js --release "$release" "$@" 2>&1 | tee bench-results/compat.txt
