#!/usr/bin/env bash
# Runs the BullMQ anchor (anchor.mjs) against a throwaway redis-server that listens on a
# Unix socket in a fresh temporary directory only (no TCP port, no persistence), and stops
# it afterwards, whatever happens.  Prints the anchor's JSON line.
# Usage: run.sh [--jobs N] [--window-ms MS] [--concurrency N] [--rate R --duration-ms MS]
#        (install.sh first)
# Exit 3 when redis-server or the npm packages are missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v redis-server >/dev/null; then
  echo "bullmq anchor: redis-server is not installed (bench/anchors/bullmq/install.sh)" >&2
  exit 3
fi
if ! command -v node >/dev/null || [ ! -d "$here/node_modules/bullmq" ]; then
  echo "bullmq anchor: Node.js or the npm packages are missing (bench/anchors/bullmq/install.sh)" >&2
  exit 3
fi
work=$(mktemp -d)
redis_pid=""
cleanup() {
  if [ -n "$redis_pid" ]; then
    kill "$redis_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$redis_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$redis_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
redis-server --port 0 --unixsocket "$work/redis.sock" --unixsocketperm 700 --save "" --appendonly no \
  --dir "$work" --daemonize no --maxmemory-policy noeviction >"$work/redis.log" 2>&1 &
redis_pid=$!
for _ in $(seq 100); do [ -S "$work/redis.sock" ] && break; sleep 0.1; done
if [ ! -S "$work/redis.sock" ]; then
  echo "bullmq anchor: redis-server did not start; its log:" >&2
  cat "$work/redis.log" >&2
  exit 1
fi
node "$here/anchor.mjs" --socket "$work/redis.sock" --redis-pid "$redis_pid" "$@"
