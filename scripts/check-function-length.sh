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
# note with its length, joined), or "cannot parse" lines when clang cannot read the file
# (its findings would be missing), written at once so that parallel runs do not mix.
tidy_one() {
  local raw out
  raw=$(clang-tidy -p "$build" --quiet --header-filter="^$root/core/" --config="$config" \
    --extra-arg=-Wno-unknown-warning-option "$1" 2>/dev/null || true)
  out=$(grep -oE "^/[^ ]+: (warning: function '[^']+'|note: [0-9]+ lines including)" <<<"$raw" |
    sed -E "s#^$root/##; s/: warning: function / /; s/: note: ([0-9]+) lines including/ \1 lines/" |
    paste -d' ' - - | awk '{print $1, $2, $4, $5}')
  out+=$(grep -E "error: .*\[clang-diagnostic-error\]" <<<"$raw" | sed -E "s#^$root/##; s/^/cannot parse: /")
  [[ -z $out ]] || echo "$out"
}
export -f tidy_one
export build config root
found=$(git ls-files 'core/*.cpp' | xargs -P "${PLEXUS_JOBS:-2}" -I{} bash -c 'tidy_one {}' | sort -u)
if grep -q "^cannot parse: " <<<"$found"; then
  grep "^cannot parse: " <<<"$found" >&2
  echo "check-function-length: clang-tidy could not parse some files; their functions were not counted" >&2
  exit 2
fi
if [[ -n $found ]]; then
  echo "$found"
  echo "check-function-length: $(wc -l <<<"$found") function(s) in core/ over $limit lines" >&2
  exit 1
fi
echo "check-function-length: no function in core/ over $limit lines"
