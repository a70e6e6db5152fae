#!/usr/bin/env bash
# The one run command (README "Quick start"): brings up the whole system, seeds demo data,
# prints the gateway URL and a demo API key.
#   bash scripts/up.sh          start (Docker Compose when an engine responds, else local processes)
#   bash scripts/up.sh down     stop everything this script started (local data is kept)
#   bash scripts/up.sh reset    stop, then wipe the local data (accounts, keys, signals, subscriptions)
#   bash scripts/up.sh status   each process up or down, its port, and how long ago the last signal came
#   bash scripts/up.sh simulate (re)start the demo feed: new signals and status changes, a few a minute
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# SIGNAL_RUN_DIR: another state directory (the status test reads one of its own).
RUN="${SIGNAL_RUN_DIR:-.run}"
# The run directory's lock and its processes' stop.
source scripts/lib/run-dir.sh
mkdir -p "$RUN/logs" "$RUN/pids"

internal_keys() {
  # The gateway's ECDSA P-256 token-signing key (PKCS#8) and its public half (SPKI), each as
  # one line of base64 DER: only the gateway gets the private key, the services the public one.
  local der; der=$(mktemp)
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 2>/dev/null |
    openssl pkcs8 -topk8 -nocrypt -outform DER -out "$der"
  echo "INTERNAL_JWT_PRIVATE_KEY=$(base64 -w0 <"$der")"
  echo "INTERNAL_JWT_PUBLIC_KEY=$(openssl pkey -inform DER -in "$der" -pubout -outform DER | base64 -w0)"
  rm -f "$der"
}

secrets() {
  # Random secrets on first use, kept out of the repo (.run/ and .env are ignored).
  if [ ! -f "$RUN/secrets.env" ]; then
    r() { head -c 32 /dev/urandom | base64 | tr -d '/+=' | head -c 43; }
    (umask 077; cat >"$RUN/secrets.env" <<ENV
API_KEY_PEPPER=$(r)
SESSION_JWT_SECRET=$(r)
INGEST_TOKEN=$(r)
ENV
    )
  fi
  # A secrets file without the signing key pair (written before the pair existed) gets one, and
  # the shared secret it held instead is dropped.
  if ! grep -q '^INTERNAL_JWT_PRIVATE_KEY=' "$RUN/secrets.env"; then
    sed -i '/^INTERNAL_JWT_SECRET=/d' "$RUN/secrets.env"
    internal_keys >>"$RUN/secrets.env"
  fi
  chmod 600 "$RUN/secrets.env"
  set -a; . "$RUN/secrets.env"; set +a
}

LOCAL_REDIS_PREFIX="${REDIS_PREFIX:-local:}"

wait_ready() { # url seconds
  for _ in $(seq $(( $2 * 10 ))); do
    curl -fsS "$1/readyz" >/dev/null 2>&1 && return 0; sleep 0.1
  done
  echo "error: $1 is not ready; see $RUN/logs/" >&2; return 1
}

down() { # [quiet]: reset says what it did itself
  if [ -f "$RUN/compose" ]; then docker compose down; rm -f "$RUN/compose"; return; fi
  stop_run_processes "$RUN"
  INFRA_PERSIST=1 infra/local/infra.sh down || true
  [ -n "${1:-}" ] || echo "stopped (data kept; 'bash scripts/up.sh reset' wipes it)"
}

reset() {
  down quiet
  echo "stopped"
  INFRA_PERSIST=1 infra/local/infra.sh reset
  # The broker is the machine's: events of the wiped data must not reach the next run.
  source scripts/lib/toolchain.sh
  # The queues and the Redis keys are wiped by the project's own code: a checkout not built yet
  # (a new clone on a machine whose run it resets) builds first, or both would be left behind.
  if [ ! -f packages/messaging/dist/cli/purge.cli.js ] || [ ! -f packages/service-kit/dist/index.js ]; then
    pnpm install --frozen-lockfile --reporter=append-only >/dev/null && pnpm run -s build \
      || echo "note: could not build: the local queues and Redis keys are left as they were" >&2
  fi
  if [ -f packages/messaging/dist/cli/purge.cli.js ] && command -v node >/dev/null; then
    AMQP_URL="${AMQP_URL:-amqp://guest:guest@127.0.0.1:5672}" node packages/messaging/dist/cli/purge.cli.js >/dev/null 2>&1 \
      || echo "note: could not purge the local queues (RabbitMQ down?)" >&2
  fi
  # Redis too is the machine's: the read models, plans and revocations of the wiped data go
  # (after a large backfill the read models alone hold hundreds of megabytes).
  if [ -f packages/service-kit/dist/index.js ] && command -v node >/dev/null; then
    REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}" node -e '
      const { connectRedis, deleteKeysMatching } = require("./packages/service-kit/dist/index.js");
      const log = { warn() {}, info() {}, error() {} };
      connectRedis(process.env.REDIS_URL, log).then(async (redis) => {
        await deleteKeysMatching(redis, process.argv[1] + "*");
        redis.disconnect();
      });' "$LOCAL_REDIS_PREFIX" || echo "note: could not wipe the local Redis keys (Redis down?)" >&2
  fi
  rm -f "$RUN/data/seeded"
}

up_docker() {
  secrets
  cp "$RUN/secrets.env" .env
  docker compose up -d --build --wait
  touch "$RUN/compose"
  docker compose exec -T signals node dist/simulator/simulate.cli.js --backfill 300 --url http://127.0.0.1:4001 --quiet
  docker compose exec -T -d signals node dist/simulator/simulate.cli.js --forever --rate 0.2 --url http://127.0.0.1:4001
  # Compose runs NODE_ENV=production: no demo login exists there. Sign up in the dashboard, or
  # create an account and a key with the operator CLI (docker compose exec api-gateway node dist/cli/admin.cli.js …).
  summary "http://127.0.0.1:${GATEWAY_PORT:-8080}" "(none: production mode; see the operator CLI)" ""
}

start() { # name entry port extra-env...
  local name=$1 entry=$2 port=$3; shift 3
  # Appended, never truncated: a restart keeps what the process logged before it (a crash's cause).
  echo "==> $(date -u +%Y-%m-%dT%H:%M:%SZ) start $name" >>"$RUN/logs/$name.log"
  env PORT="$port" WORKER_PORT="$port" "$@" node "$entry" >>"$RUN/logs/$name.log" 2>&1 &
  echo $! >"$RUN/pids/$name.pid"
}

# Before a local start: a system this run directory already runs is stopped first (a second `up`
# restarts it; starting beside it would leave its processes running with no pid file to stop
# them by), and then every port must be free (a process this script did not start would answer
# for the service that could not bind it).
claim_ports() {
  local entry name running="" port
  for entry in $PROCESSES; do
    name=${entry%%:*}
    if alive "$name"; then running="$running $name"; fi
  done
  if [ -n "$running" ]; then
    echo "==> already running:$running; restarting"
    stop_run_processes "$RUN"
  fi
  for port in 4001 4002 4003 4004 "${GATEWAY_PORT:-8080}"; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "error: port $port is in use by a process this script did not start; stop it (or set GATEWAY_PORT for the gateway's) and run again" >&2
      return 1
    fi
  done
}

up_local() {
  claim_ports
  source scripts/lib/toolchain.sh
  echo "==> dependencies and build"
  pnpm install --frozen-lockfile --reporter=append-only >/dev/null
  pnpm run -s build
  echo "==> infrastructure"
  set -a; eval "$(INFRA_PERSIST=1 infra/local/infra.sh up)"; set +a
  secrets
  export LOG_LEVEL="${LOG_LEVEL:-info}" WEBHOOK_ALLOW_LOOPBACK_URLS="${WEBHOOK_ALLOW_LOOPBACK_URLS:-true}"
  # The run's Redis keys under one prefix of their own, so that `reset` can wipe exactly them.
  export REDIS_PREFIX="$LOCAL_REDIS_PREFIX"
  echo "==> services"
  # The read services' young generation as their images set it (Dockerfile, runtime-signals and runtime-stats).
  local read_service_options="NODE_OPTIONS=${NODE_OPTIONS:+$NODE_OPTIONS }--max-semi-space-size=8"
  start signals services/signals/dist/main.js 4001 "$read_service_options"
  start stats services/stats/dist/main.js 4002 "$read_service_options"
  start webhooks-api services/webhooks/dist/main.js 4003
  start webhooks-worker services/webhooks/dist/worker.js 4004
  # One gateway process per core on the one port (node:cluster); limits stay exact across them.
  # Its young generation as its image sets it (Dockerfile, runtime-api-gateway).
  start api-gateway services/api-gateway/dist/main.js "${GATEWAY_PORT:-8080}" GATEWAY_WORKERS="${GATEWAY_WORKERS:-auto}" \
    "NODE_OPTIONS=${NODE_OPTIONS:+$NODE_OPTIONS }--max-semi-space-size=16" \
    SIGNALS_URL=http://127.0.0.1:4001 STATS_URL=http://127.0.0.1:4002 WEBHOOKS_URL=http://127.0.0.1:4003
  for p in 4001 4002 4003 4004 "${GATEWAY_PORT:-8080}"; do wait_ready "http://127.0.0.1:$p" 60; done
  echo "==> demo data"
  # History once per data set: the data is kept across down/up, so a restart must not add more.
  if [ ! -f "$RUN/data/seeded" ]; then
    SIGNALS_URL=http://127.0.0.1:4001 node services/signals/dist/simulator/simulate.cli.js --backfill 300 --seed 7
    mkdir -p "$RUN/data"; touch "$RUN/data/seeded"
  fi
  start_simulator
  demo=$(node services/api-gateway/dist/cli/admin.cli.js demo)
  key=$(echo "$demo" | sed -n 's/^DEMO_API_KEY=//p')
  # For the README's commands (KEY=$(cat .run/demo-api-key)) and `status`: readable by this user only.
  (umask 077; printf '%s\n' "$key" >"$RUN/demo-api-key")
  # The demo account's id, for the operator CLI (docs/operations.md).
  echo "$demo" | sed -n 's/^account \(acc_[^ ]*\).*/\1/p' >"$RUN/demo-account"
  password=$(echo "$demo" | sed -n 's/^DEMO_PASSWORD=\([^ ]*\).*/\1/p')
  summary "http://127.0.0.1:${GATEWAY_PORT:-8080}" "$key" "$password"
}

# The demo feed: live signals and status changes at 0.2 a second, to the local signals service.
start_simulator() {
  echo "==> $(date -u +%Y-%m-%dT%H:%M:%SZ) start simulator" >>"$RUN/logs/simulator.log"
  SIGNALS_URL=http://127.0.0.1:4001 node services/signals/dist/simulator/simulate.cli.js --forever --rate 0.2 >>"$RUN/logs/simulator.log" 2>&1 &
  echo $! >"$RUN/pids/simulator.pid"
}

# The local processes: name, port (none for the simulator).
PROCESSES="signals:4001 stats:4002 webhooks-api:4003 webhooks-worker:4004 api-gateway:${GATEWAY_PORT:-8080} simulator:"

alive() { [ -f "$RUN/pids/$1.pid" ] && kill -0 "$(cat "$RUN/pids/$1.pid")" 2>/dev/null; }

status() {
  local gateway="http://127.0.0.1:${GATEWAY_PORT:-8080}" entry name port state ready down_seen=""
  if [ -f "$RUN/compose" ]; then
    docker compose ps
  else
    printf '%-16s %-6s %-7s %s\n' PROCESS STATE PORT READY
    for entry in $PROCESSES; do
      name=${entry%%:*}; port=${entry#*:}
      state=down; alive "$name" && state=up
      ready=-
      if [ -n "$port" ]; then
        ready=no; curl -fsS -m 2 "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && ready=yes
      fi
      printf '%-16s %-6s %-7s %s\n' "$name" "$state" "${port:--}" "$ready"
      if [ "$state" = down ]; then down_seen="$down_seen $name"; fi
    done
    local holder; holder=$(cat "$RUN/up.lock/pid" 2>/dev/null || true)
    if [ -n "$holder" ] && kill -0 "$holder" 2>/dev/null; then
      echo "a 'bash scripts/up.sh' (pid $holder) is running now: starting or stopping; see again when it is done."
    elif [ -n "$down_seen" ]; then
      for name in $down_seen; do echo "down: $name (its log: $RUN/logs/$name.log)"; done
      echo "'bash scripts/up.sh' starts everything again (the data as left: kept by 'down', wiped by 'reset'; open streams reconnect)."
    fi
  fi
  last_signal "$gateway"
}

# The newest signal's age, read through the gateway with the demo key as any client would.
last_signal() {
  local gateway=$1 key created age
  if [ ! -s "$RUN/demo-api-key" ]; then
    echo "last signal:     unknown (no demo key in $RUN/demo-api-key: run 'bash scripts/up.sh')"; return 0
  fi
  key=$(cat "$RUN/demo-api-key")
  local answer status retry
  answer=$(mktemp)
  status=$(curl -sS -m 5 -o "$answer" -D "$answer.head" -w '%{http_code}' \
    -H "Authorization: Bearer $key" "$gateway/v1/signals?limit=1" 2>/dev/null) || status=000
  created=$(sed -n 's/.*"created_at":"\([^"]*\)".*/\1/p' "$answer" | head -n 1)
  retry=$(tr -d '\r' <"$answer.head" 2>/dev/null | sed -n 's/^[Rr]etry-[Aa]fter: *//p' | head -n 1)
  rm -f "$answer" "$answer.head"
  if [ -z "$created" ]; then
    case "$status" in
      429) echo "last signal:     unknown (the demo key is over its rate limit: 429, retry in ${retry:-a few} s)" ;;
      401) echo "last signal:     unknown (the gateway refused the demo key: 401, revoked or expired)" ;;
      000) echo "last signal:     unknown (the gateway at $gateway did not answer)" ;;
      *) echo "last signal:     unknown (the gateway at $gateway answered $status with no signal)" ;;
    esac
    return 0
  fi
  age=$(( $(date +%s) - $(date -d "$created" +%s) ))
  echo "last signal:     ${age} s ago ($created)"
  if ! alive simulator && [ ! -f "$RUN/compose" ]; then
    echo "the demo feed is not running: 'bash scripts/up.sh simulate' starts it"
  fi
}

simulate() {
  if [ -f "$RUN/compose" ]; then
    docker compose exec -T -d signals node dist/simulator/simulate.cli.js --forever --rate 0.2 --url http://127.0.0.1:4001
    echo "demo feed started in the signals container"; return 0
  fi
  if ! curl -fsS -m 2 http://127.0.0.1:4001/readyz >/dev/null 2>&1; then
    echo "error: the signals service (port 4001) is not up; start everything with 'bash scripts/up.sh'" >&2
    return 1
  fi
  source scripts/lib/toolchain.sh
  secrets
  if alive simulator; then
    kill "$(cat "$RUN/pids/simulator.pid")" 2>/dev/null || true
    rm -f "$RUN/pids/simulator.pid"
  fi
  start_simulator
  sleep 1
  if ! alive simulator; then
    echo "error: the demo feed exited at once; see $RUN/logs/simulator.log" >&2; return 1
  fi
  echo "demo feed running (pid $(cat "$RUN/pids/simulator.pid"), about one event every 5 s; log in $RUN/logs/simulator.log)"
}

summary() {
  local login="demo@signal.local (password printed once, when the account was first made)"
  [ -n "${3:-}" ] && login="demo@signal.local / $3   (shown once: keep it)"
  cat <<TXT

Signal Service is up.
  Gateway:       $1
  Dashboard:     $1/dashboard   (sign up, create keys, manage webhooks)
  API docs:      $1/docs
  Demo API key:  $2
  Demo login:    $login

  curl -H "Authorization: Bearer $2" "$1/v1/signals?limit=5"
  curl -H "Authorization: Bearer $2" "$1/v1/stats?period=7d"

TypeScript SDK tarball: bash scripts/sdk.sh (prints its path)
Processes and the last signal's age: bash scripts/up.sh status; restart the demo feed: bash scripts/up.sh simulate
Logs in .run/logs/. Stop with: bash scripts/up.sh down
TXT
}

# One start, stop or reset at a time per run directory (scripts/lib/run-dir.sh says why).
case "${1:-up}" in up|down|reset|simulate) take_run_lock "$RUN" ;; esac
case "${1:-up}" in
  down) down ;;
  reset) reset ;;
  status) status ;;
  simulate) simulate ;;
  up)
    if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1 && [ "${NO_DOCKER:-}" != 1 ]; then up_docker; else up_local; fi ;;
  *) echo "usage: $0 [up|down|reset|status|simulate]" >&2; exit 2 ;;
esac
