#!/usr/bin/env bash
# Two rules of the firing core (docs/firing.md, The state machine), checked by a test:
#   1. Functions in schedule/ are at most 70 lines (TIGER_STYLE's limit): a reader can
#      check one on one screen.
#   2. An occurrence's phase is written only in schedule/scheduler_transitions.cpp, whose
#      functions assert the phase they leave.
#
# Usage: check_firing_core.sh SOURCE_DIR     (exit 0 = clean, 1 = violations listed)
#        check_firing_core.sh --self-test    (proves each rule bites)
set -u
max_lines=70

# Function bodies in the house style open on a line that starts a definition at column 0
# and close with a "}" alone at column 0; everything nested is indented.
long_functions() {
  # A definition starts at a column-0 line (its signature may go on over indented lines)
  # and its body opens with the first line ending in "{"; types and namespaces are not
  # functions, and a line ending in ";" was a declaration.
  awk -v max="$max_lines" '
    FNR == 1 { cand = 0; start = 0 }
    start == 0 && /^(namespace|struct|class|enum|union|extern|using|typedef|static_assert|#|\/\/|\/\*| \*)/ { cand = 0; next }
    start == 0 && /^[A-Za-z_~]/ { cand = FNR; head = $0 }
    start == 0 && cand > 0 && /;[[:space:]]*(\/\/.*)?$/ { cand = 0; next }
    start == 0 && cand > 0 && /\{[[:space:]]*$/ { start = cand; next }
    start > 0 && /^}[[:space:]]*(\/\/.*)?$/ {
      n = FNR - start + 1
      if (n > max) printf "%s:%d: function of %d lines (at most %d): %s\n", FILENAME, start, n, max, head
      start = 0; cand = 0
    }' "$@"
}

phase_writes() {
  local root=$1
  grep -nE '(\.|->)phase[[:space:]]*=[^=]|(\.|->)phase\.emplace' "$root"/schedule/*.cpp "$root"/schedule/*.h 2>/dev/null |
    grep -v '^[^:]*schedule/scheduler_transitions\.cpp:' |
    grep -vE ':[0-9]+:[[:space:]]*//'
}

scan() {
  local root=$1 bad=0 out
  out=$(long_functions "$root"/schedule/*.cpp)
  if [ -n "$out" ]; then echo "$out"; bad=1; fi
  out=$(phase_writes "$root")
  if [ -n "$out" ]; then
    echo "$out" | sed 's/^/phase written outside scheduler_transitions.cpp: /'
    bad=1
  fi
  return $bad
}

if [ "${1:-}" = "--self-test" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/schedule"
  { echo "void f() {"; for i in $(seq 1 75); do echo "  x();"; done; echo "}"; } > "$tmp/schedule/a.cpp"
  scan "$tmp" > /dev/null && { echo "self-test: a 77-line function passed"; exit 1; }
  { echo "void f(int a,"; echo "       int b) {"; for i in $(seq 1 75); do echo "  x();"; done; echo "}"; } > "$tmp/schedule/a.cpp"
  scan "$tmp" > /dev/null && { echo "self-test: a 78-line function with a two-line signature passed"; exit 1; }
  { echo "void f(int a,"; echo "       int b) {"; for i in $(seq 1 60); do echo "  x();"; done; echo "}"; } > "$tmp/schedule/a.cpp"
  scan "$tmp" > /dev/null || { echo "self-test: a 63-line function failed"; exit 1; }
  printf 'void g(Occ& o) {\n  o.phase = Tracking{};\n}\n' > "$tmp/schedule/a.cpp"
  scan "$tmp" > /dev/null && { echo "self-test: a phase write outside the transitions passed"; exit 1; }
  printf 'void g(Occ& o) {\n  o.phase = Tracking{};\n}\n' > "$tmp/schedule/scheduler_transitions.cpp"
  rm "$tmp/schedule/a.cpp"
  scan "$tmp" > /dev/null || { echo "self-test: a phase write in the transitions failed"; exit 1; }
  echo "self-test: ok"
  exit 0
fi

scan "${1:?usage: check_firing_core.sh SOURCE_DIR}"
