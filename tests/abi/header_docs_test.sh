#!/usr/bin/env bash
# Every PLX_API function of the public headers has a doc comment right above it that states
# its thread safety ("Thread safety:") and the C API version it came in ("@since")
# (STYLE.md, "C ABI").
#   header_docs_test.sh <header>...
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: header_docs_test.sh <header>..."; exit 1; }
status=0
for header in "$@"; do
  [[ -f $header ]] || { echo "FAIL: no header at $header"; exit 1; }
  # Prints "<line>: <declaration>: missing <what>" for each declaration lacking a part.
  problems=$(awk '
    /^\/\*\*/ { comment = ""; in_comment = 1 }
    in_comment { comment = comment "\n" $0 }
    in_comment && /\*\// { in_comment = 0; last_end = FNR; next }
    /^PLX_API / {
      missing = ""
      if (last_end != FNR - 1) missing = "a doc comment"
      else {
        if (comment !~ /Thread safety: /) missing = missing " Thread safety:"
        if (comment !~ /@since [0-9]/) missing = missing " @since"
      }
      if (missing != "") print FNR ": " $0 ": missing" missing
      comment = ""
    }' "$header")
  if [[ -n $problems ]]; then
    echo "FAIL: $header"
    sed 's/^/  /' <<< "$problems"
    status=1
  else
    echo "ok: $(grep -c '^PLX_API ' "$header") PLX_API functions of $(basename "$header") documented"
  fi
done
exit $status
