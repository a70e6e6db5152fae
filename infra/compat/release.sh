#!/usr/bin/env bash
# Builds the recorded release (the commit in releases/previous) in a git worktree in the user's
# cache and prints its directory. Built once per commit and target on a machine (any clone of the
# repository reuses it); later calls print it at once.
#   infra/compat/release.sh                      every deployable (pnpm compat)
#   infra/compat/release.sh services/webhooks    one service and the packages it needs (the test command)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source scripts/lib/toolchain.sh >/dev/null
target="${1:-all}"
commit="$(grep -Eom1 '^[0-9a-f]{40}$' releases/previous)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/signal-service"
dir="$cache/release-${commit:0:12}"
mkdir -p "$cache"
# One build at a time: a second caller waits for the first and then finds it built.
exec 9>"$cache/release.lock"
flock 9
marker="$dir/.compat-built-$(echo "$target" | tr '/' '-')"
if [ -f "$marker" ] || [ -f "$dir/.compat-built-all" ]; then echo "$dir"; exit 0; fi
log() { echo "[compat] $*" >&2; }
if [ ! -e "$dir/.git" ]; then
  git cat-file -e "$commit^{commit}" 2>/dev/null || { log "release $commit is not in this clone's history (a shallow clone?)"; exit 1; }
  git worktree prune
  rm -rf "$dir"
  log "release ${commit:0:12}: worktree in $dir"
  git worktree add --force --detach "$dir" "$commit" >&2
fi
cd "$dir"
# Offline from this machine's pnpm store when it has every package (seconds), else the registry.
pnpm install --frozen-lockfile --offline --reporter=append-only >/dev/null 2>&1 \
  || pnpm install --frozen-lockfile --reporter=append-only >&2
if [ "$target" = all ]; then
  log "building the release (every deployable)"
  pnpm run -s build >&2
else
  log "building the release's $target"
  pnpm exec tsc -b "$target" >&2
fi
touch "$marker"
echo "$dir"
