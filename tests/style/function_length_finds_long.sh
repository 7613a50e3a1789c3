#!/usr/bin/env bash
# scripts/check-function-length.sh must find a function of 61 lines and pass one of 60:
# given a file holding both, it exits 1 and names the long one only.
# Usage: function_length_finds_long.sh <source root>
set -euo pipefail
root=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
body() {  # body <name> <lines>: a function spanning <lines> lines from its name to its brace
  echo "int $1(int x) {"
  for ((i = 0; i < $2 - 3; ++i)); do echo "  x += $i;"; done
  echo "  return x;"
  echo "}"
}
{ body long_one 62; body fits 61; } >"$dir/sample.cpp"
status=0
out=$(bash "$root/scripts/check-function-length.sh" "$dir/sample.cpp" 2>&1) || status=$?
echo "$out"
[[ $status -eq 1 ]] || { echo "expected exit 1, got $status" >&2; exit 1; }
grep -q "sample.cpp:1 'long_one' 61 lines" <<<"$out" || { echo "long_one (61 lines) not reported" >&2; exit 1; }
if grep -q "'fits'" <<<"$out"; then echo "fits (60 lines) reported" >&2; exit 1; fi
echo "function_length_finds_long: ok"
