#!/usr/bin/env bash
# Every document the repository names is in the repository.
#
# Checked: each `*.md` path that a source, schema, CMake, script, scenario or doc file
# names (in a comment, a string or a link), and each relative link target of a markdown
# file.  A reference resolves against the naming file's folder or the repository root
# ("docs/api.md" in a header, "api.md" in docs/).  A path that leaves the repository
# ("../../elsewhere/NOTES.md", "/home/x.md") is an error even when the file exists there:
# whoever clones the repository does not have it.  URLs are not checked, nor names built
# from shell variables, nor code blocks of markdown, nor this script (its examples are
# broken on purpose).
#
# Usage: check_doc_refs.sh SOURCE_DIR    (exit 0 = every reference resolves, 1 = listed)
#        check_doc_refs.sh --self-test   (proves that it bites)
set -u

# Files that may still cite the old name DESIGN.md until the rename reaches them (their
# code is being rewritten elsewhere); any other broken reference in them still fails.
pending_design_md=()

source_files() {
  find "$1" \( -path "$1/build" -o -path "$1/.git" -o -name 'corpus' -o -name 'node_modules' \) -prune -o -type f \
    \( -name '*.h' -o -name '*.hpp' -o -name '*.cpp' -o -name '*.cc' -o -name '*.c' -o -name '*.capnp' \
       -o -name '*.py' -o -name '*.sh' -o -name '*.cmake' -o -name 'CMakeLists.txt' -o -name '*.json' \
       -o -name '*.toml' -o -name '*.md' -o -name 'install-deps' -o -name 'run' \) -print | sort
}

# Whether `target`, named in `file`, is a file inside `root`.  Prints the reason when not.
resolves() {
  local root=$1 file=$2 target=$3 dir candidate real
  dir=$(dirname "$file")
  case "$target" in
    /*)  # "/docs/cli.md" after a root variable in code is fine; "/work/x.md" is not
      [ -e "$root$target" ] && return 0
      echo "is an absolute path"; return 1 ;;
  esac
  for candidate in "$dir/$target" "$root/$target"; do
    [ -e "$candidate" ] || continue
    real=$(realpath -m "$candidate")
    case "$real" in
      "$(realpath -m "$root")"/*) return 0 ;;
    esac
    echo "points outside the repository"
    return 1
  done
  real=$(realpath -m "$dir/$target")
  case "$real" in
    "$(realpath -m "$root")"/*) echo "does not exist" ;;
    *) echo "points outside the repository" ;;
  esac
  return 1
}

# The lines of a markdown file outside ``` blocks, as "N:text".
outside_code_blocks() {
  awk '/^ *```/ {fence = !fence; next} !fence {print NR ":" $0}' "$1"
}

is_pending() {  # file (relative) target
  [ "$(basename "$2")" = "DESIGN.md" ] || return 1
  local p
  for p in "${pending_design_md[@]}"; do [ "$p" = "$1" ] && return 0; done
  return 1
}

scan() {
  local root=$1 bad=0 file rel line target why pending=0
  while IFS= read -r file; do
    rel=${file#"$root"/}
    [ "$rel" = tests/style/check_doc_refs.sh ] && continue
    # *.md paths named anywhere; URLs are matched first so that they can be skipped.
    while IFS=: read -r line target; do
      case "$target" in http://*|https://*|.md|*'$'*|*'{'*|*'}'*) continue ;; esac  # URLs, shell variables
      target=${target%%#*}
      if why=$(resolves "$root" "$file" "$target"); then continue; fi
      if is_pending "$rel" "$target"; then pending=$((pending + 1)); continue; fi
      echo "$rel:$line: '$target' $why"
      bad=1
    done < <(grep -noE 'https?://[^][ )>"`]*|[${}A-Za-z0-9_./~-]*\.md\b' "$file" 2>/dev/null)
    # Relative link targets in markdown, any kind of file.
    case "$file" in *.md) ;; *) continue ;; esac
    while IFS=: read -r line target; do
      target=${target#](}
      target=${target%)}
      target=${target%%#*}
      target=${target%% *}
      case "$target" in ''|http://*|https://*|mailto:*|*.md) continue ;; esac
      if why=$(resolves "$root" "$file" "$target"); then continue; fi
      echo "$rel:$line: link '$target' $why"
      bad=1
    done < <(outside_code_blocks "$file" | grep -oE '^[0-9]+:|\]\([^) ]+\)' | awk '/^[0-9]+:$/ {n = $0; next} {print n $0}')
  done < <(source_files "$root")
  if [ "$pending" -gt 0 ]; then
    echo "note: $pending citation(s) of DESIGN.md left in files awaiting the rename to docs/design.md"
  fi
  return $bad
}

if [ "${1:-}" = "--self-test" ]; then
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/repo/docs" "$tmp/repo/src" "$tmp/outside"
  echo "# a" > "$tmp/repo/docs/a.md"
  echo "# outside" > "$tmp/outside/x.md"
  good=('// see docs/a.md §2' 'See [a](a.md#top) and https://example.com/NOPE.md')
  printf '%s\n' "${good[0]}" > "$tmp/repo/src/ok.cpp"
  printf '%s\n' "${good[1]}" > "$tmp/repo/docs/ok.md"
  scan "$tmp/repo" >/dev/null || { echo "self-test: a good reference was flagged"; scan "$tmp/repo"; exit 1; }
  bad_refs=('// see DESIGN.md §6' '# docs/missing.md' '// /work/outside/x.md' '// ../../outside/x.md')
  for b in "${bad_refs[@]}"; do
    printf '%s\n' "$b" > "$tmp/repo/src/bad.cpp"
    if scan "$tmp/repo" >/dev/null; then echo "self-test: not caught: $b"; exit 1; fi
  done
  rm "$tmp/repo/src/bad.cpp"
  for b in '[x](../../outside/x.md)' '[y](../src/none.h)'; do
    printf '%s\n' "$b" > "$tmp/repo/docs/bad.md"
    if scan "$tmp/repo" >/dev/null; then echo "self-test: not caught: $b"; exit 1; fi
  done
  echo "self-test: missing and outside references are caught"
  exit 0
fi

root=${1:?usage: check_doc_refs.sh SOURCE_DIR}
root=$(realpath "$root")
bash "$0" --self-test >/dev/null || { echo "doc reference checker self-test failed"; bash "$0" --self-test; exit 1; }
if scan "$root"; then echo "every document named in $root is in it"; exit 0; fi
exit 1
