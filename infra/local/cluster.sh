#!/usr/bin/env bash
# A Redis Cluster (three masters, a replica each: six redis-server processes) and a three-node
# RabbitMQ cluster on loopback, beside the shared single-node servers (never touched here), so the
# services and their tests can run against the engines' distributed forms on one machine.
#   infra/local/cluster.sh up      -> writes .run/cluster.env (REDIS_URL, AMQP_URL)
#   infra/local/cluster.sh down    -> stops every process `up` started and removes their data
#   infra/local/cluster.sh status  -> the Redis slot map and the RabbitMQ cluster's members
#   infra/local/cluster.sh queues  -> every queue of the RabbitMQ cluster with its type (name<TAB>type)
#   infra/local/cluster.sh kill-redis-master | kill-redis N | start-redis N | kill-rabbit N | start-rabbit N
#                                  -> the chaos run's faults: SIGKILL one process, start it again
# Ports: Redis 7301-7306 (CLUSTER_REDIS_BASE), RabbitMQ AMQP 5781-5783 (CLUSTER_AMQP_BASE) with
# Erlang distribution on 25781-25783. State under .run/cluster/.
# `CLUSTER=1 infra/local/infra.sh up` points the tests' .run/infra.env at this cluster.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
STATE="$ROOT/.run/cluster"
ENV_FILE="$ROOT/.run/cluster.env"
REDIS_BASE="${CLUSTER_REDIS_BASE:-7300}"
AMQP_BASE="${CLUSTER_AMQP_BASE:-5780}"
# How long a master may be silent before its replica takes over (Redis' default is 15 s).
NODE_TIMEOUT_MS="${CLUSTER_NODE_TIMEOUT_MS:-2000}"
RABBIT_BIN=/usr/lib/rabbitmq/bin

log() { echo "[cluster] $*" >&2; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() { # port seconds
  local i; for ((i = 0; i < $2 * 10; i++)); do port_open "$1" && return 0; sleep 0.1; done; return 1
}
pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
# In the subshell that starts a daemon: only stdin, stdout and stderr pass on, so a node started
# again by a test or the chaos run (under `flock /tmp/heavy.lock`) never holds the caller's lock.
close_fds() {
  local fd
  for fd in /proc/$BASHPID/fd/*; do
    fd="${fd##*/}"
    # (the directory listing's own descriptor is gone by now: closed only if still open)
    if [ "$fd" -gt 2 ] && [ -e "/proc/$BASHPID/fd/$fd" ]; then eval "exec $fd>&-"; fi
  done
  return 0
}

redis_port() { echo $((REDIS_BASE + $1)); }

start_redis() { # N (1-6)
  local n="$1" port dir; port="$(redis_port "$n")"; dir="$STATE/redis-$n"
  mkdir -p "$dir"
  if pid_alive "$dir/redis.pid"; then return; fi
  port_open "$port" && { log "port $port is taken by something else"; exit 1; }
  # nodes.conf is kept across a kill: the node comes back as itself (a master that lost its
  # slots while away rejoins as its successor's replica).
  (close_fds && exec redis-server --port "$port" --bind 127.0.0.1 --daemonize yes --dir "$dir" \
    --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout "$NODE_TIMEOUT_MS" \
    --save "" --appendonly no --pidfile "$dir/redis.pid" --logfile "$dir/redis.log")
  wait_port "$port" 20 || { log "redis $n did not start (see $dir/redis.log)"; exit 1; }
}

redis_up() {
  command -v redis-server >/dev/null || { log "redis-server not installed"; exit 1; }
  local n hosts=()
  for n in 1 2 3 4 5 6; do start_redis "$n"; hosts+=("127.0.0.1:$(redis_port "$n")"); done
  if [ "$(redis-cli -p "$(redis_port 1)" cluster info | tr -d '\r' | sed -n 's/^cluster_state://p')" != ok ]; then
    if [ "$(redis-cli -p "$(redis_port 1)" cluster info | tr -d '\r' | sed -n 's/^cluster_known_nodes://p')" = 1 ]; then
      redis-cli --cluster create "${hosts[@]}" --cluster-replicas 1 --cluster-yes >"$STATE/redis-create.log" 2>&1 \
        || { log "redis-cli --cluster create failed (see $STATE/redis-create.log)"; exit 1; }
    fi
    local i
    for ((i = 0; i < 300; i++)); do
      [ "$(redis-cli -p "$(redis_port 1)" cluster info | tr -d '\r' | sed -n 's/^cluster_state://p')" = ok ] && break
      sleep 0.1
    done
  fi
  log "redis cluster: $(redis-cli -p "$(redis_port 1)" cluster info | tr -d '\r' | grep -E '^cluster_state|^cluster_size' | tr '\n' ' ')"
}

rabbit_env() { # N: the environment of node N, for the server and for rabbitmqctl
  local n="$1"
  local dir="$STATE/rabbit-$n"
  echo "HOME=$STATE/erlang-home"
  echo "RABBITMQ_NODENAME=rabbit-c$n@localhost"
  echo "RABBITMQ_NODE_IP_ADDRESS=127.0.0.1"
  echo "RABBITMQ_NODE_PORT=$((AMQP_BASE + n))"
  echo "RABBITMQ_DIST_PORT=$((AMQP_BASE + 20000 + n))"
  echo "RABBITMQ_MNESIA_BASE=$dir/mnesia"
  echo "RABBITMQ_LOG_BASE=$dir/log"
  echo "RABBITMQ_PID_FILE=$dir/rabbit.pid"
  # Not the shared server's files: no management or prometheus listener to collide with it.
  echo "RABBITMQ_ENABLED_PLUGINS_FILE=$STATE/enabled_plugins"
  echo "RABBITMQ_CONFIG_FILE=$dir/rabbitmq.conf"
  echo "RABBITMQ_CONF_ENV_FILE=$STATE/rabbitmq-env.conf"
  echo "RABBITMQ_ADVANCED_CONFIG_FILE=$STATE/advanced.config"
  echo "ERL_EPMD_ADDRESS=127.0.0.1"
}

rabbitctl() { # N args…
  local n="$1"; shift
  env $(rabbit_env "$n") "$RABBIT_BIN/rabbitmqctl" -n "rabbit-c$n@localhost" "$@"
}

start_rabbit() { # N (1-3)
  local n="$1"
  local dir="$STATE/rabbit-$n"
  mkdir -p "$dir/log" "$dir/mnesia" "$STATE/erlang-home"
  if port_open $((AMQP_BASE + n)); then return; fi
  echo "listeners.tcp.local = 127.0.0.1:$((AMQP_BASE + n))" >"$dir/rabbitmq.conf"
  echo "loopback_users = none" >>"$dir/rabbitmq.conf"
  # A lost node's quorum queues keep a majority on the other two.
  echo "cluster_partition_handling = pause_minority" >>"$dir/rabbitmq.conf"
  # Detached with every descriptor its own: a caller reading this script's output gets its end.
  (cd "$dir" && close_fds && exec setsid env $(rabbit_env "$n") "$RABBIT_BIN/rabbitmq-server") </dev/null >"$dir/stdout.log" 2>&1 &
  local i
  for ((i = 0; i < 1200; i++)); do
    [ -f "$dir/rabbit.pid" ] && break; sleep 0.1
  done
  rabbitctl "$n" -q await_startup --timeout 120 >/dev/null 2>&1 \
    || { log "rabbitmq node $n did not start (see $dir/log)"; exit 1; }
}

rabbit_running() { # N: the running members as node N sees them
  rabbitctl "$1" -q cluster_status --formatter json 2>/dev/null \
    | node -e 'let s="";process.stdin.on("data",(d)=>(s+=d)).on("end",()=>console.log(JSON.parse(s).running_nodes.join(" ")))'
}

rabbit_up() {
  [ -x "$RABBIT_BIN/rabbitmq-server" ] || { log "rabbitmq-server not installed"; exit 1; }
  mkdir -p "$STATE"
  echo "[]." >"$STATE/enabled_plugins"
  : >"$STATE/rabbitmq-env.conf"
  echo "[]." >"$STATE/advanced.config"
  local n
  for n in 1 2 3; do start_rabbit "$n"; done
  for n in 2 3; do
    if ! rabbitctl "$n" -q cluster_status --formatter json | grep -q '"rabbit-c1@localhost"'; then
      rabbitctl "$n" -q stop_app >/dev/null
      rabbitctl "$n" -q join_cluster rabbit-c1@localhost >/dev/null
      rabbitctl "$n" -q start_app >/dev/null
    fi
  done
  log "rabbitmq cluster: running $(rabbit_running 1)"
}

up() {
  mkdir -p "$STATE"
  redis_up
  rabbit_up
  cat >"$ENV_FILE" <<ENV
REDIS_URL=redis-cluster://127.0.0.1:$(redis_port 1),127.0.0.1:$(redis_port 2),127.0.0.1:$(redis_port 3)
AMQP_URL=amqp://guest:guest@127.0.0.1:$((AMQP_BASE + 1)),amqp://guest:guest@127.0.0.1:$((AMQP_BASE + 2)),amqp://guest:guest@127.0.0.1:$((AMQP_BASE + 3))
ENV
  cat "$ENV_FILE"
}

stop_redis() { # N
  local pidfile="$STATE/redis-$1/redis.pid"
  pid_alive "$pidfile" && kill -9 "$(cat "$pidfile")" 2>/dev/null || true
}

stop_rabbit() { # N [kill]
  local pidfile="$STATE/rabbit-$1/rabbit.pid"
  pid_alive "$pidfile" || return 0
  if [ "${2:-}" = kill ]; then kill -9 "$(cat "$pidfile")" 2>/dev/null || true
  else rabbitctl "$1" -q stop >/dev/null 2>&1 || kill -9 "$(cat "$pidfile")" 2>/dev/null || true; fi
  local i; for ((i = 0; i < 100; i++)); do pid_alive "$pidfile" || break; sleep 0.1; done
  rm -f "$pidfile"
}

down() {
  local n
  for n in 1 2 3 4 5 6; do stop_redis "$n"; done
  for n in 3 2 1; do stop_rabbit "$n"; done
  rm -rf "$STATE" "$ENV_FILE"
  log "stopped; state removed"
}

# The master that serves slot 0 (the one the chaos run kills): its node number, 1-6.
redis_master_of_slot0() {
  local n port
  for n in 1 2 3 4 5 6; do
    port_open "$(redis_port "$n")" || continue
    port="$(redis-cli -p "$(redis_port "$n")" cluster nodes | tr -d '\r' \
      | awk '$3 ~ /master/ && $3 !~ /fail/ { for (i = 9; i <= NF; i++) if ($i ~ /^0(-|$)/) { split($2, a, /[:@]/); print a[2] } }')"
    [ -n "$port" ] && { echo $((port - REDIS_BASE)); return; }
  done
  return 1
}

status() {
  local n
  for n in 1 2 3 4 5 6; do
    if port_open "$(redis_port "$n")"; then
      echo "redis $n: $(redis-cli -p "$(redis_port "$n")" role | head -n 1)"
    else echo "redis $n: down"; fi
  done
  for n in 1 2 3; do
    if port_open $((AMQP_BASE + n)); then echo "rabbitmq $n: running nodes $(rabbit_running "$n")"
    else echo "rabbitmq $n: down"; fi
  done
}

queues() { # asked of the first running node
  local n
  for n in 1 2 3; do
    port_open $((AMQP_BASE + n)) || continue
    rabbitctl "$n" -q list_queues name type --no-table-headers 2>/dev/null && return 0
  done
  return 1
}

case "${1:-up}" in
  up) up ;;
  queues) queues ;;
  down) down ;;
  status) status ;;
  kill-redis-master) n="$(redis_master_of_slot0)"; stop_redis "$n"; echo "$n" ;;
  kill-redis) stop_redis "$2" ;;
  start-redis) start_redis "$2" ;;
  kill-rabbit) stop_rabbit "$2" kill ;;
  start-rabbit) start_rabbit "$2" ;;
  *) echo "usage: $0 up|down|status|queues|kill-redis-master|kill-redis N|start-redis N|kill-rabbit N|start-rabbit N" >&2; exit 2 ;;
esac
