# Sourced, not run: what scripts/up.sh does with a run directory.
#
# `take_run_lock DIR` makes this shell the one start, stop or reset of a run
# directory, or exits 1 naming the one that is (scripts/up.sh). Two starts at once each passed
# the port check, started every service twice and recorded the pids of the copies that then
# exited, so status showed serving processes as down and reset left a MongoDB-wire server
# running. A directory, not flock: the services started here would inherit a lock's descriptor
# and hold it. The lock appears with its holder's pid already in it (a directory renamed into
# place), so a second start never finds it empty and takes it for a killed holder's.
take_run_lock() {
  local dir=$1
  local lock="$dir/up.lock" mine="$dir/up.lock.$$" holder stale
  if ! _place_run_lock "$mine" "$lock"; then
    holder=$(cat "$lock/pid" 2>/dev/null || true)
    if [ -n "$holder" ] && kill -0 "$holder" 2>/dev/null; then
      echo "error: another 'bash scripts/up.sh' (pid $holder) is running for $dir; wait for it to finish, then see 'bash scripts/up.sh status'" >&2
      exit 1
    fi
    # Its holder is gone (killed mid-way): the lock is taken over, by one start only. The rename
    # away succeeds for one of them, and a lock that changed hands since it was read goes back.
    stale="$dir/up.lock.stale.$$"
    if mv -T "$lock" "$stale" 2>/dev/null && [ "$(cat "$stale/pid" 2>/dev/null || true)" != "$holder" ]; then
      mv -T "$stale" "$lock" 2>/dev/null || true
      echo "error: another 'bash scripts/up.sh' is starting for $dir" >&2
      exit 1
    fi
    rm -rf "$stale"
    if ! _place_run_lock "$mine" "$lock"; then
      echo "error: another 'bash scripts/up.sh' is starting for $dir" >&2
      exit 1
    fi
  fi
  trap "rm -rf '$lock'" EXIT
}

# A directory holding this shell's pid, renamed to LOCK: fails when LOCK is there already.
_place_run_lock() { # mine lock
  rm -rf "$1"
  mkdir -p "$1" && echo $$ >"$1/pid"
  if mv -T "$1" "$2" 2>/dev/null; then return 0; fi
  rm -rf "$1"
  return 1
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
