#!/usr/bin/env bash
# Builds the .deb from a configured and built tree, installs it with dpkg -i on this
# machine, and checks what an operator would get:
#   - Depends names the Debian packages of the linked libraries (dpkg-shlibdeps);
#   - /usr/bin/caesium --version answers the project's version, and `caesium version` names
#     mimalloc as its allocator;
#   - the unit passes `systemd-analyze verify` and has the settings docs/install.md
#     promises (dedicated user, StateDirectory, Restart=on-failure, a stop timeout, reload);
#   - the caesium user exists;
#   - the installed example config runs: a node started from it (as the caesium user, on
#     free loopback ports, in a temporary directory) answers /healthz and `caesium status`.
# Then it purges the package again (unless it was installed before this ran).
#
#   tests/package/check_deb.sh [BUILD_DIR]     (default build/release)
#
# Needs root (dpkg -i); as another user it exits 77 (skipped).  Every process it starts
# is stopped before it exits; the whole check is bounded (the node gets 20 s to answer).
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build/release}"
if [ "$(id -u)" -ne 0 ]; then
  echo "check_deb: skipped: dpkg -i needs root"
  exit 77
fi
for tool in cpack dpkg-deb dpkg-shlibdeps systemd-analyze curl setpriv; do
  command -v "$tool" >/dev/null || { echo "check_deb: $tool is missing (bash .ci/install-deps)"; exit 1; }
done

work="$(mktemp -d /tmp/caesium-deb.XXXXXX)"
chmod 0755 "$work"
node_pid=""
installed_before=0
if dpkg-query -W -f='${Status}' caesium 2>/dev/null | grep -q "install ok installed"; then installed_before=1; fi
cleanup() {
  if [ -n "$node_pid" ] && kill -0 "$node_pid" 2>/dev/null; then
    kill -TERM "$node_pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$node_pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$node_pid" 2>/dev/null || true
    wait "$node_pid" 2>/dev/null || true
  fi
  if [ "$installed_before" -eq 0 ]; then dpkg --purge caesium >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "check_deb: FAILED: $*"; exit 1; }

echo "== cpack"
(cd "$build" && cpack -G DEB -B "$work/pkg" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; fail "cpack"; }
deb="$(ls "$work"/pkg/caesium_*.deb)"
echo "$deb"
depends="$(dpkg-deb -f "$deb" Depends)"
echo "Depends: $depends"
for lib in libc6 libstdc++6 libuv1 libsodium23 liblmdb0 libcurl4 libssl3 libmimalloc2.0 passwd; do
  grep -q "\b$lib\b" <<<"$depends" || fail "Depends lacks $lib"
done
dpkg-deb -c "$deb" >"$work/contents"
grep -q "\./usr/bin/caesium$" "$work/contents" || fail "no /usr/bin/caesium in the package"

echo "== dpkg -i"
dpkg -i "$deb"
version="$(sed -n 's/^project(caesium VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)"
got="$(/usr/bin/caesium --version)"
echo "/usr/bin/caesium --version: $got"
grep -q "$version" <<<"$got" || fail "--version says '$got', not $version"
allocator="$(/usr/bin/caesium version | sed -n 's/^allocator: //p')"
echo "/usr/bin/caesium version: allocator $allocator"
grep -q "^mimalloc " <<<"$allocator" || fail "the packaged binary runs on '$allocator', not mimalloc"
getent passwd caesium >/dev/null || fail "no caesium user"
[ -f /etc/caesium/node.toml ] || fail "no /etc/caesium/node.toml"
[ -f /usr/share/doc/caesium/README.install ] || fail "no install note"
dpkg-query -W -f='${Conffiles}\n' caesium | grep -q /etc/caesium/node.toml || fail "node.toml is not a conffile"

echo "== the unit"
unit=/usr/lib/systemd/system/caesium.service
[ -f "$unit" ] || unit=/lib/systemd/system/caesium.service
[ -f "$unit" ] || fail "no caesium.service installed"
systemd-analyze verify "$unit" || fail "systemd-analyze verify $unit"
for want in "^User=caesium$" "^StateDirectory=caesium$" "^Restart=on-failure$" "^TimeoutStopSec=" \
            "^ExecReload=/bin/kill -HUP \\\$MAINPID$" "^ExecStart=/usr/bin/caesium node --config /etc/caesium/node.toml$"; do
  grep -q "$want" "$unit" || fail "$unit lacks $want"
done
# The stop timeout must outlast the graceful leave: shutdown_grace plus 2 s of lingering.
stop_s="$(sed -n 's/^TimeoutStopSec=\([0-9]*\)$/\1/p' "$unit")"
grace_s="$(sed -n 's/^shutdown_grace = "\([0-9]*\)s".*/\1/p' /etc/caesium/node.toml)"
[ -n "$stop_s" ] && [ -n "$grace_s" ] && [ "$stop_s" -gt $((grace_s + 2)) ] ||
  fail "TimeoutStopSec ($stop_s) is not longer than shutdown_grace ($grace_s s) + 2 s"

echo "== a node from the installed config"
base=$((20000 + RANDOM % 9000))
sed -e "s#^data_dir = .*#data_dir = \"$work/data\"#" \
    -e "s#127.0.0.1:7111#127.0.0.1:$base#" -e "s#127.0.0.1:7112#127.0.0.1:$((base + 1))#" \
    -e "s#127.0.0.1:7113#127.0.0.1:$((base + 2))#" \
    -e "s#^\[api\]#[api]\ntoken_file = \"api.token\"#" /etc/caesium/node.toml >"$work/node.toml"
/usr/bin/caesium keygen --out "$work/cluster.key" >/dev/null
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/api.token"
chown caesium:caesium "$work/cluster.key" "$work/api.token"
chmod 0600 "$work/api.token"
chown caesium:caesium "$work"
setpriv --reuid caesium --regid caesium --init-groups -- /usr/bin/caesium node --config "$work/node.toml" >"$work/node.log" 2>&1 &
node_pid=$!
ok=0
for _ in $(seq 1 100); do
  if curl -fsS "http://127.0.0.1:$((base + 2))/healthz" >/dev/null 2>&1; then ok=1; break; fi
  kill -0 "$node_pid" 2>/dev/null || break
  sleep 0.2
done
[ "$ok" -eq 1 ] || { cat "$work/node.log"; fail "the node from the installed config did not answer /healthz"; }
status="$(/usr/bin/caesium status --api "127.0.0.1:$((base + 2))" --token-file "$work/api.token" --json)"
grep -q '"node": *"n1"' <<<"$status" || grep -q '"node":"n1"' <<<"$status" || fail "caesium status: $status"
kill -TERM "$node_pid"
for _ in $(seq 1 100); do kill -0 "$node_pid" 2>/dev/null || break; sleep 0.2; done
if kill -0 "$node_pid" 2>/dev/null; then fail "the node did not stop within 20 s of SIGTERM"; fi
wait "$node_pid" || fail "the node exited with status $? after SIGTERM"
node_pid=""
echo "check_deb: 1 passed, 0 failed"
