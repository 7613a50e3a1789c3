#!/usr/bin/env bash
# libplexus.so exports only plx_* symbols, and exactly the functions its public headers
# (plexus.h and types.h) declare with PLX_API (STYLE.md, "C ABI"): the headers are the
# allow-list, deprecated aliases included.
#   exported_symbols_test.sh <libplexus.so> <C compiler, to strip comments> <header>...
set -euo pipefail
export LC_ALL=C

usage="usage: exported_symbols_test.sh <libplexus.so> <cc> <header>..."
lib=${1:?$usage}
cc=${2:?$usage}
shift 2
[[ $# -ge 1 ]] || { echo "$usage"; exit 1; }
[[ -f $lib ]] || { echo "FAIL: no library at $lib"; exit 1; }
for header in "$@"; do
  [[ -f $header ]] || { echo "FAIL: no header at $header"; exit 1; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Every defined dynamic symbol of the library, whatever its type (functions, data, weak).
nm -D --defined-only "$lib" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' | sort -u > "$tmp/exported"
[[ -s $tmp/exported ]] || { echo "FAIL: nm -D found no symbols in $lib"; exit 1; }

# The header's PLX_API declarations: comments stripped by the preprocessor (directives kept
# but not expanded), directive lines dropped, the rest joined so a declaration spanning
# lines reads as one; the name is the identifier right before the parameter list.
for header in "$@"; do
  "$cc" -w -fpreprocessed -dD -E -P -x c "$header"
done > "$tmp/stripped"
grep -v '^[[:space:]]*#' "$tmp/stripped" | tr '\n' ' ' | tr ';' '\n' |
  grep -oE '(^|[^A-Za-z0-9_])PLX_API[[:space:]][^(]*\(' |
  sed -E 's/[[:space:]]*\($//; s/.*[^A-Za-z0-9_]//' | sort -u > "$tmp/declared"
[[ -s $tmp/declared ]] || { echo "FAIL: found no PLX_API declarations in $*"; exit 1; }

# report <title> <file>: prints the file's lines under the title; fails when there are any.
report() {
  [[ -s $2 ]] || return 0
  echo "FAIL: $1"
  sed 's/^/  /' "$2"
  return 1
}
grep -v '^plx_' "$tmp/exported" > "$tmp/not_plx" || true
comm -23 "$tmp/exported" "$tmp/declared" > "$tmp/undeclared"
comm -13 "$tmp/exported" "$tmp/declared" > "$tmp/missing"
status=0
report "$lib exports symbols without the plx_ prefix:" "$tmp/not_plx" || status=1
report "exported by $lib but not declared with PLX_API in $*:" "$tmp/undeclared" || status=1
report "declared with PLX_API in $* but not exported by $lib:" "$tmp/missing" || status=1
if [[ $status -eq 0 ]]; then
  echo "ok: $(wc -l < "$tmp/exported") symbols exported, all plx_*, exactly the PLX_API functions of the headers"
fi
exit $status
