#!/usr/bin/env bash
# Starts the three-node example cluster on 127.0.0.1 and shows its logs.
#
#   examples/run-cluster.sh              run until Ctrl-C, then stop the nodes cleanly
#   examples/run-cluster.sh --for 30s    run for 30 seconds (also 2m, or plain seconds)
#   examples/run-cluster.sh --clean      wipe examples/data first (a fresh cluster)
#
# The binary is $CAESIUM_BIN, else build/release/node/caesium.  Each node logs to
# examples/data/<id>.log; this script tails the three logs, each line prefixed with its
# node id.  Stopping sends SIGTERM (graceful leave: running handlers finish, storage is
# flushed), waits up to 15 s, then kills what is left.  Exit status: 0 when every node
# stopped cleanly, 1 otherwise, 2 for bad usage or a node that failed to start.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
bin="${CAESIUM_BIN:-$root/build/release/node/caesium}"
nodes=(n1 n2 n3)
run_for=""
clean=0

while [ $# -gt 0 ]; do
  case "$1" in
    --for) run_for="${2:-}"; shift 2 ;;
    --for=*) run_for="${1#--for=}"; shift ;;
    --clean) clean=1; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "run-cluster: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

seconds_of() {  # 30s, 2m, 1h or plain seconds -> seconds
  case "$1" in
    *[!0-9smh]* | "") return 1 ;;
    *s) echo "${1%s}" ;;
    *m) echo $(( ${1%m} * 60 )) ;;
    *h) echo $(( ${1%h} * 3600 )) ;;
    *) echo "$1" ;;
  esac
}
if [ -n "$run_for" ]; then
  run_seconds="$(seconds_of "$run_for")" || { echo "run-cluster: --for wants e.g. 30s or 2m, got '$run_for'" >&2; exit 2; }
fi

if [ ! -x "$bin" ]; then
  echo "run-cluster: no caesium binary at $bin" >&2
  echo "  build it: cmake --preset release && cmake --build --preset release  (or set CAESIUM_BIN)" >&2
  exit 2
fi

cd "$here"
# One run at a time per examples directory: a second one would wipe (--clean) or share
# the data directories of the first.
exec 9<"$here/run-cluster.sh"
if ! flock -n 9; then
  echo "run-cluster: another run-cluster.sh is running in $here" >&2
  exit 2
fi
for port in 7112 7122 7132; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "run-cluster: something already listens on 127.0.0.1:$port (another cluster?)" >&2
    exit 2
  fi
done
# A key file must not be readable by others; git cannot store that mode.
chmod 600 cluster.key api.token
[ "$clean" -eq 1 ] && rm -rf data
# A cluster none of whose nodes has a data directory yet starts for the first time: its
# nodes vote at once (--first-start).  A node whose directory alone is missing was wiped,
# and abstains on what it may have voted on before (docs/firing.md, Amnesia).
first_start=()
fresh=1
for n in "${nodes[@]}"; do [ -e "data/$n" ] && fresh=0; done
[ "$fresh" -eq 1 ] && first_start=(--first-start)
mkdir -p data

declare -A pid
tails=()
stopping=0

# Nodes and log tailers run in sessions of their own (setsid), so a Ctrl-C in this
# terminal reaches only this script, which then stops them in order.
for n in "${nodes[@]}"; do
  : > "data/$n.log"
  setsid "$bin" node --config "$n.toml" "${first_start[@]}" >> "data/$n.log" 2>&1 < /dev/null &
  pid[$n]=$!
done
for n in "${nodes[@]}"; do
  setsid bash -c 'exec tail -n +1 -F "$1" 2>/dev/null | sed -u "s/^/$2 | /"' _ "data/$n.log" "$n" &
  tails+=($!)
done

stop_tails() {
  sleep 0.3  # let the last lines through
  for t in "${tails[@]}"; do kill -- "-$t" 2>/dev/null || true; done
  wait "${tails[@]}" 2>/dev/null || true
}

stop_nodes() {
  [ "$stopping" -eq 1 ] && return
  stopping=1
  echo "run-cluster: stopping ${nodes[*]} (SIGTERM)" >&2
  for n in "${nodes[@]}"; do kill -TERM "${pid[$n]}" 2>/dev/null || true; done
  local deadline=$(( $(date +%s) + 15 ))
  for n in "${nodes[@]}"; do
    while kill -0 "${pid[$n]}" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.1; done
  done
  local status=0
  for n in "${nodes[@]}"; do
    if kill -0 "${pid[$n]}" 2>/dev/null; then
      echo "run-cluster: $n did not stop in 15 s; killing it" >&2
      kill -KILL "${pid[$n]}" 2>/dev/null || true
      status=1
    fi
    local rc=0
    wait "${pid[$n]}" 2>/dev/null || rc=$?
    if [ "$rc" -ne 0 ] && [ "$status" -eq 0 ]; then
      echo "run-cluster: $n exited with status $rc (see examples/data/$n.log)" >&2
      status=1
    fi
  done
  stop_tails
  local fired
  fired=$(grep -h "completed ok" data/n1.log data/n2.log data/n3.log 2>/dev/null | wc -l)
  echo "run-cluster: stopped; $fired occurrences completed (logs in examples/data/)" >&2
  exit "$status"
}
trap stop_nodes INT TERM

# A node that cannot start (port in use, bad config) exits at once with status 2.
sleep 1
for n in "${nodes[@]}"; do
  if ! kill -0 "${pid[$n]}" 2>/dev/null; then
    echo "run-cluster: $n failed to start:" >&2
    tail -n 5 "data/$n.log" >&2
    for m in "${nodes[@]}"; do kill -TERM "${pid[$m]}" 2>/dev/null || true; done
    stopping=1
    for m in "${nodes[@]}"; do wait "${pid[$m]}" 2>/dev/null || true; done
    stop_tails
    exit 2
  fi
done

if [ -n "$run_for" ]; then
  end=$(( $(date +%s) + run_seconds ))
  while [ "$(date +%s)" -lt "$end" ]; do sleep 0.5; done
  stop_nodes
fi
# Until Ctrl-C (the trap stops the nodes and exits).
while true; do sleep 1; done
