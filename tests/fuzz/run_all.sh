#!/usr/bin/env bash
# Runs every built fuzz target for SECONDS each, starting from its seed corpus
# (tests/fuzz/corpus/<name>/ when present).  Any crash, leak or timeout fails the run.
# Usage: run_all.sh BUILD_DIR [SECONDS]
set -euo pipefail
build=${1:?usage: run_all.sh BUILD_DIR [SECONDS]}
seconds=${2:-30}
here=$(cd "$(dirname "$0")" && pwd)
status=0
for bin in "$build"/tests/fuzz/*_fuzz; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin")
  work=$(mktemp -d)
  corpus=()
  [ -d "$here/corpus/$name" ] && corpus=("$here/corpus/$name")
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
  rm -rf "$work"
done
exit $status
