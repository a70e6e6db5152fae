#!/usr/bin/env bash
# Prints the path of the oasdiff binary the breaking-change check runs (scripts/contracts.js),
# building it from the Go module pinned in this folder's go.mod the first time (~1-2 min) into the
# user's cache, like the FerretDB wrapper (infra/local/infra.sh). OASDIFF=/path/to/oasdiff skips it.
set -euo pipefail
if [ -n "${OASDIFF:-}" ]; then echo "$OASDIFF"; exit 0; fi
src="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
hash="$(cat "$src/go.mod" "$src/go.sum" | sha256sum | cut -c1-16)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/signal-service"
bin="$cache/oasdiff-$hash"
if [ ! -x "$bin" ]; then
  PATH="$PATH:/usr/local/go/bin"
  command -v go >/dev/null || { echo "oasdiff: no Go toolchain to build it (needs Go >= 1.26)" >&2; exit 1; }
  mkdir -p "$cache"
  echo "building oasdiff (first time only, ~1-2 min)" >&2
  # One build at a time: parallel test workers wait for the first instead of building twice.
  exec 9>"$cache/oasdiff.lock"
  flock 9
  if [ ! -x "$bin" ]; then
    # Without -trimpath, like the FerretDB wrapper and the Kubernetes check: builds with the same
    # flags share the standard library's compile in Go's build cache (scripts/test.sh).
    (cd "$src" && go build -o "$bin.tmp.$$" github.com/oasdiff/oasdiff && mv "$bin.tmp.$$" "$bin")
  fi
fi
echo "$bin"
