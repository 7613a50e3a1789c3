#!/usr/bin/env bash
# Lists every function in core/ longer than 60 lines (clang-tidy's readability-function-size,
# which counts a function's lines from its opening to its closing brace, lambdas included)
# and exits 1 when there is one. Needs a configured build's compile_commands.json.
# Usage: scripts/check-function-length.sh [build dir, default build]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
limit=60
[[ -f $build/compile_commands.json ]] || { echo "check-function-length: no $build/compile_commands.json (configure a build first)" >&2; exit 2; }
command -v clang-tidy >/dev/null || { echo "check-function-length: clang-tidy not found (Debian package clang-tidy)" >&2; exit 2; }
config="{Checks: '-*,readability-function-size', CheckOptions: [{key: readability-function-size.LineThreshold, value: $limit}]}"
echo "check-function-length: clang-tidy -p $build --config=\"$config\" on core/*.cpp"
cd "$root"
# tidy_one <file>: its findings, one line each (a warning naming the function, then the
# note with its length, joined), written at once so that parallel runs do not interleave.
tidy_one() {
  local out
  out=$(clang-tidy -p "$build" --quiet --header-filter="^$root/core/" --config="$config" "$1" 2>/dev/null |
    grep -oE "^/[^ ]+: (warning: function '[^']+'|note: [0-9]+ lines including)" |
    sed -E "s#^$root/##; s/: warning: function / /; s/: note: ([0-9]+) lines including/ \1 lines/" |
    paste -d' ' - - | awk '{print $1, $2, $4, $5}')
  [[ -z $out ]] || echo "$out"
}
export -f tidy_one
export build config root
found=$(git ls-files 'core/*.cpp' | xargs -P "${PLEXUS_JOBS:-2}" -I{} bash -c 'tidy_one {}' | sort -u)
if [[ -n $found ]]; then
  echo "$found"
  echo "check-function-length: $(wc -l <<<"$found") function(s) in core/ over $limit lines" >&2
  exit 1
fi
echo "check-function-length: no function in core/ over $limit lines"
