# Sourced by the benches that run the gateway under valgrind (mallocs.sh, callgrind.sh,
# cache_misses.sh): their shared steps. Needs ROOT set and `set -euo pipefail`.

# start_downstream DIR: bench/valgrind_downstream.py in the background; sets DOWN (its pid) and
# DPORT (the port it listens on, once it does).
start_downstream() {
  python3 "$ROOT/bench/valgrind_downstream.py" > "$1/down.port" 2>/dev/null &
  DOWN=$!
  until [[ -s $1/down.port ]]; do
    kill -0 "$DOWN" 2>/dev/null || { echo "the downstream exited before listening" >&2; return 1; }
    sleep 0.05
  done
  DPORT=$(cat "$1/down.port")
}

# gateway_port OUT PID: the port of the gateway PID's "listening on" line in OUT (its stdout), once
# written; fails if the gateway exits first.
gateway_port() {
  local port=""
  until [[ -n $port ]]; do
    kill -0 "$2" 2>/dev/null || { echo "the gateway exited before listening" >&2; return 1; }
    sleep 0.05
    port=$(sed -n 's#^listening on http://[0-9.]*:\([0-9]*\)$#\1#p' "$1")
  done
  echo "$port"
}
