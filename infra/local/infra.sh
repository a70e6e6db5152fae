#!/usr/bin/env bash
# Makes Redis, RabbitMQ and a MongoDB-wire server available on loopback and prints their
# URLs. Idempotent: uses what already runs, starts what is stopped, and remembers what it
# started so that `down` stops exactly that and nothing else.
#   infra/local/infra.sh up     -> writes .run/infra.env (REDIS_URL, AMQP_URL, MONGO_URL)
#   infra/local/infra.sh down   -> stops what `up` started
#   INFRA_PERSIST=1 infra/local/infra.sh up|down   -> the run command's mode: the local
#       MongoDB-wire data is kept across down/up (tests leave it unset: throwaway data)
#   infra/local/infra.sh reset  -> stops it and wipes the kept data
#   INFRA_ASYNC_COMMIT=1 infra/local/infra.sh up   -> the test command's: the throwaway database's
#       commits do not wait for the disk (PostgreSQL's synchronous_commit = off)
#   CLUSTER=1 infra/local/infra.sh up   -> REDIS_URL and AMQP_URL name the Redis Cluster and the
#       three-node RabbitMQ of infra/local/cluster.sh (started if need be; `cluster.sh down` stops them)
#
# Instances: the run command (INFRA_PERSIST=1, instance "run"), the tests (the default, "test")
# and the benches (INFRA_INSTANCE=bench) each have their own state directory, MongoDB-wire
# server and database, so the tests or a bench started beside `bash scripts/up.sh` in the same
# checkout never use, read or stop the run's server. The test instance keeps the historical
# paths (.run/infra/, .run/infra.env: jest reads the latter); the others use
# .run/infra-<instance>/ and .run/infra-<instance>.env.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
RUN="$ROOT/.run"
INSTANCE="${INFRA_INSTANCE:-}"
[ -z "$INSTANCE" ] && { [ -n "${INFRA_PERSIST:-}" ] && INSTANCE=run || INSTANCE=test; }
case "$INSTANCE" in *[!a-z0-9]*) echo "INFRA_INSTANCE: lower-case letters and digits only" >&2; exit 2 ;; esac
if [ "$INSTANCE" = test ]; then STATE="$RUN/infra"; ENV_FILE="$RUN/infra.env"
else STATE="$RUN/infra-$INSTANCE"; ENV_FILE="$RUN/infra-$INSTANCE.env"; fi
mkdir -p "$STATE"

log() { echo "[infra] $*" >&2; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() { # port seconds
  local i; for ((i = 0; i < $2 * 10; i++)); do port_open "$1" && return 0; sleep 0.1; done; return 1
}
free_port() { node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

redis_up() {
  if port_open 6379; then log "redis: using the one on 127.0.0.1:6379"; return; fi
  command -v redis-server >/dev/null || { log "redis-server not installed (apt-get install redis-server)"; exit 1; }
  mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir "${REDIS_DIR:-/var/lib/redis}" --pidfile "$STATE/redis.pid" --logfile "$STATE/redis.log"
  wait_port 6379 20 || { log "redis did not start"; exit 1; }
  touch "$STATE/redis.started"; log "redis: started on 127.0.0.1:6379"
}

rabbit_up() {
  if port_open 5672; then log "rabbitmq: using the one on 127.0.0.1:5672"; return; fi
  command -v rabbitmq-server >/dev/null || { log "rabbitmq-server not installed (apt-get install rabbitmq-server)"; exit 1; }
  rabbitmq-server -detached >/dev/null 2>&1 || true
  rabbitmqctl -q await_startup --timeout 120 >/dev/null 2>&1 || true
  wait_port 5672 120 || { log "rabbitmq did not start"; exit 1; }
  touch "$STATE/rabbitmq.started"; log "rabbitmq: started on 127.0.0.1:5672"
}

# The binary for one backend: built for PostgreSQL it leaves out FerretDB's SQLite backend
# (modernc.org/sqlite, C translated to Go), a third of a cold build's CPU (docs/development.md).
ferret_binary() { # backend
  local src="$ROOT/infra/ferretdb" hash cache tags=""
  [ "$1" = postgresql ] && tags="ferretdb_no_sqlite"
  hash="$( (cat "$src/go.mod" "$src/go.sum" "$src"/*.go; echo "tags=$tags") | sha256sum | cut -c1-16)"
  cache="${XDG_CACHE_HOME:-$HOME/.cache}/signal-service"
  mkdir -p "$cache"
  if [ ! -x "$cache/ferretdb-$hash" ]; then
    command -v go >/dev/null || { log "no MONGO_URL, no mongod and no Go toolchain to build FerretDB"; exit 1; }
    log "building the embedded FerretDB 1.24.2 wrapper for $1 (first time only, ~1-2 min)"
    # Without -trimpath, like oasdiff and the Kubernetes check: builds with the same flags share
    # the standard library's compile in Go's build cache (scripts/test.sh).
    (cd "$src" && go build -tags "$tags" -o "$cache/ferretdb-$hash.tmp.$$" . && mv "$cache/ferretdb-$hash.tmp.$$" "$cache/ferretdb-$hash")
  fi
  echo "$cache/ferretdb-$hash"
}

# One database per checkout and instance, so two clones on one machine, or the tests and a bench
# of one clone, never share or drop each other's.
CHECKOUT="$(echo "$ROOT" | sha256sum | cut -c1-8)"
if [ "$INSTANCE" = test ]; then PG_DB="${FERRETDB_PG_DB:-signal_ferretdb_$CHECKOUT}"
else PG_DB="${FERRETDB_PG_DB:-signal_${INSTANCE}_$CHECKOUT}"; fi
PG_KEPT_DB="signal_run_$CHECKOUT"

# FerretDB 1.24's SQLite backend pushes down only `_id` equality: every other filter, and every
# compare-and-set update, scans the whole collection in Go. The PostgreSQL backend pushes down
# top-level filters, which keeps outbox and CAS writes fast; so PostgreSQL when it is here.
ferret_backend() {
  if [ -n "${FERRETDB_BACKEND:-}" ]; then echo "$FERRETDB_BACKEND"; return; fi
  if command -v psql >/dev/null; then
    if ! port_open 5432 && command -v pg_ctlcluster >/dev/null; then
      pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start >/dev/null 2>&1 && touch "$STATE/postgres.started" || true
      wait_port 5432 20 || true
    fi
    if port_open 5432 && psql -h 127.0.0.1 -U postgres -tAc 'SELECT 1' >/dev/null 2>&1; then echo postgresql; return; fi
  fi
  echo sqlite
}

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

mongo_up() {
  if [ -n "${MONGO_URL:-}" ]; then log "mongo: using MONGO_URL"; echo "$MONGO_URL" >"$STATE/mongo.url"; return; fi
  if pid_alive "$STATE/mongo.pid" && [ -f "$STATE/mongo.url" ]; then log "mongo: already running ($(cat "$STATE/mongo.url"))"; return; fi
  local port="${MONGO_PORT:-27017}"
  port_open "$port" && port="$(free_port)"
  if command -v mongod >/dev/null; then
    mkdir -p "$STATE/mongod-data"
    setsid nohup mongod --bind_ip 127.0.0.1 --port "$port" --dbpath "$STATE/mongod-data" >"$STATE/mongo.log" 2>&1 &
    echo $! >"$STATE/mongo.pid"
  else
    local bin backend; backend="$(ferret_backend)"
    bin="$(ferret_binary "$backend")"
    if [ "$backend" = postgresql ]; then
      if [ -n "${INFRA_PERSIST:-}" ]; then
        # The run command's database: kept across down/up, wiped only by `reset`.
        psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$PG_KEPT_DB'" | grep -q 1 \
          || psql -h 127.0.0.1 -U postgres -q -c "CREATE DATABASE $PG_KEPT_DB ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0" >/dev/null
        db="$PG_KEPT_DB"
      else
        # A throwaway database of our own, new on every `up`, dropped on `down`.
        psql -h 127.0.0.1 -U postgres -q -c "DROP DATABASE IF EXISTS $PG_DB" >/dev/null 2>&1 || true
        psql -h 127.0.0.1 -U postgres -q -c "CREATE DATABASE $PG_DB ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0" >/dev/null
        # The test command's: its data ends with the instance, so a commit need not wait for the
        # disk (a crash loses at most the last moments of a database dropped anyway); the tests
        # write thousands of small documents, each its own commit (~25 % of an insert's time
        # here). Not for benches: their store-bound figures stand for a durable store.
        if [ -n "${INFRA_ASYNC_COMMIT:-}" ]; then
          psql -h 127.0.0.1 -U postgres -q -c "ALTER DATABASE $PG_DB SET synchronous_commit = off" >/dev/null
        fi
        touch "$STATE/pg-db.created"; db="$PG_DB"
      fi
      # One PostgreSQL (100 connections) serves every instance on the machine (tests, benches,
      # the run command, other checkouts). pgx keeps an idle connection 30 min by default, so one
      # burst kept up to 60 connections from every other instance long after it ended ("too many
      # clients already" in a stress run beside three benches' instances). FerretDB 1.24 turns
      # any given pool_max_conn_idle_time into 1 min anyway (its pool/uri.go): idle ones go back after a
      # minute. No TLS on loopback: pgx's default (sslmode=prefer) encrypted every row between
      # two processes of one machine, about a tenth of the PostgreSQL backends' CPU (perf).
      # GOGC=400: FerretDB decodes every row it reads into short-lived documents, and Go's
      # collector at its default 100 took a tenth of its samples; at 400 the same tests cost it a
      # fifth less CPU (docs/development.md) for a heap of a few hundred MB at most.
      GOGC="${GOGC:-400}" setsid nohup "$bin" -listen "127.0.0.1:$port" -handler postgresql \
        -postgresql-url "postgres://postgres@127.0.0.1:5432/$db?sslmode=disable&pool_max_conns=60&pool_max_conn_idle_time=1m&pool_health_check_period=2s" \
        -max-concurrent-commands 24 \
        >"$STATE/mongo.log" 2>&1 &
    else
      local dir="$STATE/ferretdb-data"
      if [ -n "${INFRA_PERSIST:-}" ]; then dir="$RUN/data/ferretdb-sqlite"; else rm -rf "$dir"; fi
      mkdir -p "$dir"
      GOGC="${GOGC:-400}" setsid nohup "$bin" -listen "127.0.0.1:$port" -handler sqlite -sqlite-url "file:$dir/" >"$STATE/mongo.log" 2>&1 &  # GOGC: as above
    fi
    echo $! >"$STATE/mongo.pid"
    log "mongo: FerretDB 1.24.2 with the $backend backend"
  fi
  wait_port "$port" 30 || { log "MongoDB-wire server did not start: $(tail -n 5 "$STATE/mongo.log")"; exit 1; }
  echo "mongodb://127.0.0.1:$port" >"$STATE/mongo.url"
  log "mongo: started $(command -v mongod >/dev/null && echo mongod || echo FerretDB) on 127.0.0.1:$port"
}

# A run started before the instances had their own directories kept its server in .run/infra/:
# a server there that serves the run's kept data (the kept PostgreSQL database, or the kept
# SQLite or mongod directory) moves to the run's directory, so the tests never take it for theirs.
adopt_old_run() {
  local old="$RUN/infra" cmd
  [ "$STATE" = "$old" ] || [ "$INSTANCE" = run ] || return 0
  pid_alive "$old/mongo.pid" || return 0
  cmd="$(tr '\0' ' ' <"/proc/$(cat "$old/mongo.pid")/cmdline" 2>/dev/null || true)"
  case "$cmd" in
    *"$PG_KEPT_DB"* | *"$RUN/data/ferretdb-sqlite"*) ;;
    *) return 0 ;;
  esac
  mkdir -p "$RUN/infra-run"
  mv "$old/mongo.pid" "$RUN/infra-run/mongo.pid"
  [ -f "$old/mongo.url" ] && mv "$old/mongo.url" "$RUN/infra-run/mongo.url"
  log "mongo: the running system's server moved to .run/infra-run/"
}

up() {
  redis_up
  rabbit_up
  mongo_up
  local redis_url=redis://127.0.0.1:6379 amqp_url=amqp://guest:guest@127.0.0.1:5672
  if [ -n "${CLUSTER:-}" ]; then
    # The Redis Cluster and three-node RabbitMQ of infra/local/cluster.sh instead of the shared ones.
    "$ROOT/infra/local/cluster.sh" up >/dev/null
    redis_url="$(sed -n 's/^REDIS_URL=//p' "$RUN/cluster.env")"
    # One node: the tests' own AMQP helpers connect to one URL; the queues are quorum queues on
    # all three nodes either way.
    amqp_url="$(sed -n 's/^AMQP_URL=//p' "$RUN/cluster.env" | cut -d, -f1)"
  fi
  cat >"$ENV_FILE" <<ENV
REDIS_URL=$redis_url
AMQP_URL=$amqp_url
MONGO_URL=$(cat "$STATE/mongo.url")
ENV
  cat "$ENV_FILE"
}

# Another instance of this checkout whose MongoDB-wire server still runs (it may use the Redis,
# RabbitMQ or PostgreSQL this instance started).
other_instance_up() {
  local d
  for d in "$RUN"/infra "$RUN"/infra-*/; do
    d="${d%/}"
    [ "$d" = "$STATE" ] || [ ! -d "$d" ] && continue
    pid_alive "$d/mongo.pid" && { echo "$d"; return 0; }
  done
  return 1
}

down() {
  if pid_alive "$STATE/mongo.pid"; then
    kill "$(cat "$STATE/mongo.pid")" 2>/dev/null || true
    for _ in $(seq 50); do pid_alive "$STATE/mongo.pid" || break; sleep 0.1; done
    pid_alive "$STATE/mongo.pid" && kill -9 "$(cat "$STATE/mongo.pid")" 2>/dev/null || true
    log "mongo: stopped"
  fi
  rm -f "$STATE/mongo.pid" "$STATE/mongo.url"; rm -rf "$STATE/ferretdb-data" "$STATE/mongod-data"
  if [ -f "$STATE/pg-db.created" ]; then
    psql -h 127.0.0.1 -U postgres -q -c "DROP DATABASE IF EXISTS $PG_DB" >/dev/null 2>&1 || true
    rm -f "$STATE/pg-db.created"
  fi
  # What this instance started and another one still uses stays up: the other instance's `down`
  # stops it.
  local other
  if other="$(other_instance_up)"; then
    for m in postgres rabbitmq redis; do
      [ -f "$STATE/$m.started" ] && mv "$STATE/$m.started" "$other/$m.started" && log "$m: left running for $(basename "$other")"
    done
  fi
  if [ -f "$STATE/postgres.started" ]; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main stop >/dev/null 2>&1 || true
    rm -f "$STATE/postgres.started"; log "postgresql: stopped"
  fi
  if [ -f "$STATE/rabbitmq.started" ]; then rabbitmqctl -q stop >/dev/null 2>&1 || true; rm -f "$STATE/rabbitmq.started"; log "rabbitmq: stopped"; fi
  if [ -f "$STATE/redis.started" ]; then redis-cli -p 6379 shutdown nosave >/dev/null 2>&1 || true; rm -f "$STATE/redis.started"; log "redis: stopped"; fi
  rm -f "$ENV_FILE"
}

reset() {
  down
  rm -rf "$RUN/data/ferretdb-sqlite"
  if command -v psql >/dev/null && port_open 5432; then
    psql -h 127.0.0.1 -U postgres -q -c "DROP DATABASE IF EXISTS $PG_KEPT_DB" >/dev/null 2>&1 || true
  fi
  log "local data wiped"
}

adopt_old_run
case "${1:-up}" in
  up) up ;;
  down) down ;;
  reset) reset ;;
  *) echo "usage: $0 up|down|reset" >&2; exit 2 ;;
esac
