#!/usr/bin/env bash
# docs/benchmarks.md's synopsis and caesium-bench's parser list the same benchmarks and
# options (the `caesium` side is tests/unit/cli_docs_test.cpp).
#
# The parser side is `caesium-bench --help-all`: a line without indent under
# "Subcommands:" names a benchmark, an indented "--option" line one of its options.  The
# docs side is the fenced block of the "## Synopsis" section: a line "caesium-bench NAME
# [--option VALUE] ..." per benchmark, continued on indented lines.  --json and --help are on every benchmark and are
# not listed.
#
# Usage: check_bench_docs.sh CAESIUM_BENCH DOC   (exit 0 = the same, 1 = the differences)
#        check_bench_docs.sh --self-test         (proves that it bites)
set -u

# "benchmark" and "benchmark --option" lines, sorted, from --help-all text on stdin.
from_help() {
  awk '/^Subcommands:/ {s = 1; next}
       s && /^[a-z]/ {name = $1; print name; next}
       s && /^ +--/ && $1 != "--json" && $1 != "--help-all" {print name " " $1}' | sort
}

# The same from the markdown on stdin.
from_doc() {
  awk '/^## / {sec = ($0 == "## Synopsis"); next}
       sec && /^```/ {fence = !fence; name = ""; next}
       !(sec && fence) {next}
       /^caesium-bench [a-z]/ {name = $2; print name; first = 3}
       /^[ \t]/ && name != "" {first = 1}
       !/^caesium-bench [a-z]/ && !/^[ \t]/ {name = ""; next}
       name != "" {
         for (i = first; i <= NF; i++) {
           o = $i; gsub(/[][|()]/, "", o)
           if (o ~ /^--[a-z]/ && o != "--json") print name " " o
         }
       }' | sort -u
}

compare() {  # help-file doc-file
  if diff <(from_help < "$1") <(from_doc < "$2") > /dev/null; then return 0; fi
  echo "caesium-bench --help-all (<) and the synopsis of the docs (>) differ:"
  diff <(from_help < "$1") <(from_doc < "$2") | grep '^[<>]'
  return 1
}

if [ "${1:-}" = "--self-test" ]; then
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  printf 'Usage: x\n\nSubcommands:\ncron\n  summary\n  Options:\n    --seed N     s\n    --json       j\n\nwheel\n  w\n' > "$tmp/help"
  printf '# B\n\n## Synopsis\n\n```\ncaesium-bench cron [--json]\n    [--seed N]\ncaesium-bench wheel\n```\n' > "$tmp/good.md"
  compare "$tmp/help" "$tmp/good.md" > /dev/null || { echo "self-test: matching lists were flagged"; exit 1; }
  printf '# B\n\n## Synopsis\n\n```\ncaesium-bench cron\ncaesium-bench wheel\n```\n' > "$tmp/missing.md"
  printf '# B\n\n## Synopsis\n\n```\ncaesium-bench cron [--seed N] [--budget-ms MS]\ncaesium-bench wheel\n```\n' > "$tmp/extra.md"
  for f in missing extra; do
    if compare "$tmp/help" "$tmp/$f.md" > /dev/null; then echo "self-test: a $f option was not caught"; exit 1; fi
  done
  echo "self-test: a missing or an extra option is caught"
  exit 0
fi

bench=${1:?usage: check_bench_docs.sh CAESIUM_BENCH DOC}
doc=${2:?usage: check_bench_docs.sh CAESIUM_BENCH DOC}
bash "$0" --self-test > /dev/null || { echo "check_bench_docs.sh self-test failed"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$bench" --help-all > "$tmp/help" || { echo "$bench --help-all failed"; exit 1; }
if compare "$tmp/help" "$doc"; then echo "$doc lists every benchmark and option of $bench"; exit 0; fi
exit 1
