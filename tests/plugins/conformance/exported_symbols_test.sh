#!/usr/bin/env bash
# A plugin exports exactly its entry point (STYLE.md, "C ABI"; docs/design.md, "Plugins").
#   exported_symbols_test.sh <libplexus-KIND-NAME.so> <entry symbol>
set -euo pipefail
export LC_ALL=C
lib=${1:?usage: exported_symbols_test.sh <plugin.so> <entry symbol>}
entry=${2:?usage: exported_symbols_test.sh <plugin.so> <entry symbol>}
[[ -f $lib ]] || { echo "FAIL: no plugin at $lib"; exit 1; }
exported=$(nm -D --defined-only "$lib" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' | sort -u)
if [[ $exported != "$entry" ]]; then
  echo "FAIL: $lib should export only $entry; it exports:"
  sed 's/^/  /' <<< "$exported"
  exit 1
fi
echo "ok: $(basename "$lib") exports only $entry"
