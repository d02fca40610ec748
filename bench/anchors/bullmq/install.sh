#!/usr/bin/env bash
# Installs what the BullMQ anchor needs, on request (never by the build or CI): Debian's
# redis-server and nodejs/npm when missing, and the pinned npm packages (package-lock.json).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update
  $sudo apt-get install -y "${missing[@]}"
fi
cd "$here"
npm ci --no-audit --no-fund
