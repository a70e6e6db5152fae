# Sourced, not run: what scripts/up.sh does with a run directory.
#
# `take_run_lock DIR` makes this shell the one start, stop or reset of a run
# directory, or exits 1 naming the one that is (scripts/up.sh). Two starts at once each passed
# the port check, started every service twice and recorded the pids of the copies that then
# exited, so status showed serving processes as down and reset left a MongoDB-wire server
# running. The lock is a directory holding its holder's pid, for as long as the holder runs; it
# is looked at and taken under flock(1) on a file beside it, held only for that moment and only
# in a subshell, so no service started afterwards inherits the descriptor, and a holder killed
# mid-way leaves a lock the next start sees is dead and takes over (one start: the flock).
take_run_lock() {
  local dir=$1 lock="$1/up.lock" holder
  holder=$(
    (
      flock -w 10 9 || { echo '?'; exit 0; }
      current=$(cat "$lock/pid" 2>/dev/null || true)
      if [ -n "$current" ] && kill -0 "$current" 2>/dev/null; then
        echo "$current"
        exit 0
      fi
      rm -rf "$lock"
      mkdir -p "$lock" && echo "$$" >"$lock/pid"
    ) 9>"$dir/up.lock.guard"
  )
  if [ "$holder" = '?' ]; then
    echo "error: another 'bash scripts/up.sh' is starting for $dir" >&2
    exit 1
  elif [ -n "$holder" ]; then
    echo "error: another 'bash scripts/up.sh' (pid $holder) is running for $dir; wait for it to finish, then see 'bash scripts/up.sh status'" >&2
    exit 1
  fi
  trap "rm -rf '$lock'" EXIT
}

# `stop_run_processes DIR`: each process of DIR/pids gets SIGTERM and up to 10 s to shut down as
# it does in production (drained, its connections closed); one still running then is killed.
# Returns once every one is gone, so its port is free for a start right after: a restart that
# killed at 1 s and went on at once cut the services' drain and found their ports still held,
# then blamed another program for them.
stop_run_processes() {
  local f pids="" pid i
  for f in "$1"/pids/*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f"); pids="$pids $pid"
    kill "$pid" 2>/dev/null || true
  done
  for i in $(seq 100); do
    _running_pids $pids || break
    [ "$i" -eq 100 ] || sleep 0.1
  done
  for pid in $pids; do kill -9 "$pid" 2>/dev/null || true; done
  for i in $(seq 50); do _running_pids $pids || break; sleep 0.1; done
  rm -f "$1"/pids/*.pid
}

# Whether any of the pids still runs.
_running_pids() {
  local pid
  for pid in "$@"; do kill -0 "$pid" 2>/dev/null && return 0; done
  return 1
}
