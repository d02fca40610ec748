#!/usr/bin/env bash
# The sans-IO rule (docs/design.md §2, docs/conventions.md §12), checked by a test rather than by memory:
# the core folders may not name a real clock, start a thread, use a global random
# source, or call libuv.  They get time and randomness passed in.
#
# Usage: check_sans_io.sh SOURCE_DIR        (exit 0 = clean, 1 = violations listed)
#        check_sans_io.sh --self-test       (proves each pattern bites)
set -u

core_dirs=(wheel schedule gossip base node/core node/wire)

# One extended regex per banned thing, with the reason printed on a hit.
patterns=(
  'std::chrono::(system_clock|steady_clock|high_resolution_clock|utc_clock|file_clock)|[^a-z_]clock_gettime|gettimeofday|[^a-z_.]time\(\s*(NULL|nullptr|0)?\s*\)|date::utc_clock|std::time\b|\btimespec_get\b|::now\(\)|!a real clock'
  'std::(j)?thread|pthread_create|std::async\b|!a thread'
  'std::random_device|[^a-z_]s?rand\(|random_shuffle|getrandom|/dev/u?random|randombytes|!a global random source'
  '\buv_[a-z_]+|<uv\.h>|!a libuv call'
  '\bsleep\(|usleep|nanosleep|sleep_for|sleep_until|!sleeping'
  'std::getenv|[^a-z_]getenv\(|fprintf|[^a-z_.]printf\(|std::cout|std::cerr|std::clog|fopen|ifstream|ofstream|!console or file I/O'
)

scan() {
  local root=$1 bad=0
  for entry in "${patterns[@]}"; do
    local regex=${entry%|!*} why=${entry##*!}
    for d in "${core_dirs[@]}"; do
      [ -d "$root/$d" ] || continue
      # Comments may name these things (to explain the rule); code may not.
      while IFS= read -r hit; do
        [ -n "$hit" ] || continue
        local text=${hit#*:*:}
        case "$(echo "$text" | sed 's/^[[:space:]]*//')" in
          //*|\**|/\**) continue ;;
        esac
        # A documented exception carries the marker on the line itself.
        case "$text" in *sans-io-exception*) continue ;; esac
        echo "sans-IO violation ($why): $hit"
        bad=1
      done < <(grep -rnE --include='*.h' --include='*.hpp' --include='*.cpp' --include='*.cc' "$regex" "$root/$d" 2>/dev/null)
    done
  done
  return $bad
}

if [ "${1:-}" = "--self-test" ]; then
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/wheel"
  samples=('auto t = std::chrono::steady_clock::now();' 'std::thread t([]{});'
           'std::random_device rd;' 'int x = rand();' 'uv_timer_start(&t, cb, 1, 0);'
           'usleep(5);' 'auto n = std::chrono::system_clock::now();'
           'if (std::getenv("X")) {}' 'std::fprintf(stderr, "x");' 'std::ifstream in(path);')
  for s in "${samples[@]}"; do
    echo "$s" > "$tmp/wheel/x.cpp"
    if scan "$tmp" >/dev/null; then echo "self-test: pattern did not catch: $s"; exit 1; fi
  done
  echo '// std::thread is named in a comment only' > "$tmp/wheel/x.cpp"
  scan "$tmp" >/dev/null || { echo "self-test: a comment was flagged"; exit 1; }
  echo "self-test: every banned pattern is caught"
  exit 0
fi

root=${1:?usage: check_sans_io.sh SOURCE_DIR}
bash "$0" --self-test >/dev/null || { echo "style checker self-test failed"; exit 1; }
if scan "$root"; then echo "sans-IO rule holds in: ${core_dirs[*]}"; exit 0; fi
exit 1
