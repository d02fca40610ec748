#!/usr/bin/env bash
# Runs every built fuzz target for SECONDS each, starting from its seed corpus
# (tests/fuzz/corpus/<name>/ when present), JOBS targets at a time (default: the number
# of cores; each target is one process on one core).  Any crash, leak or timeout fails
# the run.  Each target's report is printed whole when it ends.
# Usage: run_all.sh BUILD_DIR [SECONDS] [JOBS]
set -euo pipefail
build=${1:?usage: run_all.sh BUILD_DIR [SECONDS] [JOBS]}
seconds=${2:-30}
jobs=${3:-$(nproc)}
here=$(cd "$(dirname "$0")" && pwd)
reports=$(mktemp -d)
trap 'rm -rf "$reports"' EXIT

# One target: its report goes to $reports/<name>.out, its status to $reports/<name>.rc.
fuzz_one() {
  local bin=$1 name work status=0
  name=$(basename "$bin")
  work=$(mktemp -d)
  local corpus=()
  [ -d "$here/corpus/$name" ] && corpus=("$here/corpus/$name")
  {
    echo "fuzz: $name for ${seconds}s"
    if ! "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
         -artifact_prefix="$work/" "$work" "${corpus[@]}" >"$work/log" 2>&1; then
      echo "fuzz: $name FAILED; last lines of its log:"
      tail -40 "$work/log"
      ls "$work" | grep -E '^(crash|leak|timeout|oom)-' || true
      status=1
    else
      grep -E "^#[0-9]+.*(DONE|pulse)" "$work/log" | tail -1 || true
    fi
  } >"$reports/$name.out"
  echo "$status" >"$reports/$name.rc"
  rm -rf "$work"
}

targets=()
for bin in "$build"/tests/fuzz/*_fuzz; do
  [ -x "$bin" ] && targets+=("$bin")
done
running=0
for bin in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  fuzz_one "$bin" &
  running=$((running + 1))
done
wait || true

status=0
for bin in "${targets[@]}"; do
  name=$(basename "$bin")
  cat "$reports/$name.out"
  # A target whose status file is missing died without reporting: a failure too.
  [ "$(cat "$reports/$name.rc" 2>/dev/null || echo 1)" = 0 ] || status=1
done
exit $status
