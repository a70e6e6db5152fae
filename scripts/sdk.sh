#!/usr/bin/env bash
# The TypeScript SDK as a user installs it (README "Quick start"): builds packages/sdk and packs
# it into a tarball that `npm install` takes anywhere (Node >= 18, no pnpm, no registry), then
# prints the tarball's absolute path (the only line on stdout; progress goes to stderr).
#   bash scripts/sdk.sh          writes packages/sdk/signal-sdk-<version>.tgz
#   bash scripts/sdk.sh DIR      writes it into DIR instead
# Sets up what it needs like the run command: Node 24 and pnpm in .tools/, the dependencies.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
out="${1:-packages/sdk}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
source scripts/lib/toolchain.sh >&2
if [ ! -d node_modules ] || [ ! -d packages/contracts/dist ]; then
  echo "==> dependencies and build" >&2
  pnpm install --frozen-lockfile --reporter=append-only >/dev/null
  pnpm run -s build >&2
fi
echo "==> packing the TypeScript SDK" >&2
(cd packages/sdk && pnpm run -s pack:tarball --pack-destination "$out") >/dev/null
version="$(node -p 'require(process.argv[1]).version' "$ROOT/packages/sdk/package.json")"
tarball="$out/signal-sdk-$version.tgz"
[ -f "$tarball" ] || { echo "error: pnpm pack did not write $tarball" >&2; exit 1; }
echo "$tarball"
