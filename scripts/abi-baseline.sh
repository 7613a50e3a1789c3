#!/usr/bin/env bash
# The ABI baseline of libplexus.so (docs/design.md, "The C ABI"): abi/baseline/ holds one
# abidw dump (Debian's abigail-tools) of the library's public types and functions, named
# after the version it describes, libplexus.so.<SOVERSION>-api<PLX_API_VERSION>.abi.
#
#   abi-baseline.sh check  <libplexus.so> <include dir>   # ctest abi_baseline_test
#   abi-baseline.sh update <libplexus.so> <include dir>   # with a version bump only
#
# check fails when the library's ABI differs from the baseline while its version has not
# moved: any change (an added function or field is a new PLX_API_VERSION), an incompatible
# one above all (a removed function, a changed struct layout or signature: a new SOVERSION,
# the project's major version). It also fails when the version moved but the baseline was
# not regenerated. update writes the baseline for the current version and removes the old
# one; it refuses when the version has not moved, and when abidiff calls the change
# incompatible (a removed function) but the SOVERSION is the same. abidiff files a changed
# member type or layout as a plain change (status bit 4), like an addition: update prints
# its report, and telling the two apart (fields appended after struct_size's last version
# are additions; anything else needs a new SOVERSION) is the reviewer's call. The library
# needs DWARF for its types (abi/CMakeLists.txt builds the C API's own files with -g).
set -euo pipefail
export LC_ALL=C

usage="usage: abi-baseline.sh check|update <libplexus.so> <include dir>"
mode=${1:?$usage}
lib=${2:?$usage}
include=${3:?$usage}
[[ $mode == check || $mode == update ]] || { echo "$usage" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
baseline_dir=$root/abi/baseline
for tool in abidw abidiff objdump; do
  command -v $tool >/dev/null || { echo "FAIL: $tool not found (scripts/install-deps.sh installs abigail-tools)"; exit 1; }
done
[[ -f $lib ]] || { echo "FAIL: no library at $lib"; exit 1; }
[[ -f $include/plexus/types.h ]] || { echo "FAIL: no plexus/types.h under $include"; exit 1; }

soname=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
api=$(sed -nE 's/^#define PLX_API_VERSION ([0-9]+).*/\1/p' "$include/plexus/types.h")
[[ -n $soname && -n $api ]] || { echo "FAIL: no SONAME in $lib or no PLX_API_VERSION in types.h"; exit 1; }
wanted=$baseline_dir/$soname-api$api.abi
shopt -s nullglob
baselines=("$baseline_dir"/*.abi)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The public ABI only (the exported functions and the types declared under include/plexus),
# without build paths, line numbers or DT_NEEDED, so that the dump depends on the headers
# and not on the build tree or the build type.
abidw --exported-interfaces-only --headers-dir "$include/plexus" --drop-private-types --no-corpus-path \
  --no-comp-dir-path --no-show-locs --no-elf-needed --type-id-style hash --out-file "$tmp/current.abi" "$lib"

# compare <baseline>: abidiff's report to $tmp/report; returns abidiff's status bits
# (1 error, 2 usage, 4 ABI change, 8 incompatible ABI change).
compare() {
  local status=0
  abidiff --no-show-locs "$1" "$tmp/current.abi" >"$tmp/report" 2>&1 || status=$?
  return $status
}
fail_with_report() {  # fail_with_report <message>
  echo "FAIL: $1"
  sed 's/^/  /' "$tmp/report"
  exit 1
}

if [[ $mode == update ]]; then
  if [[ ${#baselines[@]} -gt 0 ]]; then
    [[ ${baselines[0]} != "$wanted" ]] || { echo "FAIL: $(basename "$wanted") exists: bump PLX_API_VERSION (and the SOVERSION for an incompatible change) before regenerating the baseline"; exit 1; }
    status=0
    compare "${baselines[0]}" || status=$?
    (( status & 3 )) && fail_with_report "abidiff could not compare $(basename "${baselines[0]}") with $lib"
    old_soname=$(basename "${baselines[0]}" | sed -E 's/-api[0-9]+\.abi$//')
    if (( status & 8 )) && [[ $old_soname == "$soname" ]]; then
      fail_with_report "an incompatible ABI change needs a new SOVERSION (the project's major version), still $soname"
    fi
    [[ -s $tmp/report ]] && { echo "abidiff $(basename "${baselines[0]}") -> this library:"; sed 's/^/  /' "$tmp/report"; }
    rm -f "${baselines[@]}"
  fi
  mkdir -p "$baseline_dir"
  cp "$tmp/current.abi" "$wanted"
  echo "wrote $wanted"
  exit 0
fi

[[ ${#baselines[@]} -eq 1 ]] || { echo "FAIL: $baseline_dir must hold exactly one .abi baseline (it holds ${#baselines[@]})"; exit 1; }
baseline=${baselines[0]}
status=0
compare "$baseline" || status=$?
(( status & 3 )) && fail_with_report "abidiff could not compare $(basename "$baseline") with $lib"
if [[ $baseline != "$wanted" ]]; then
  echo "FAIL: the baseline is $(basename "$baseline") but the library is $soname with PLX_API_VERSION $api:"
  echo "  regenerate it with: scripts/abi-baseline.sh update $lib $include"
  exit 1
fi
(( status & 8 )) && fail_with_report "incompatible ABI change in $soname without a new SOVERSION (baseline $(basename "$baseline")):"
(( status & 4 )) && fail_with_report "ABI change in $soname without a version bump (PLX_API_VERSION still $api; baseline $(basename "$baseline")): an addition needs a new PLX_API_VERSION, a changed type or signature a new SOVERSION:"
echo "ok: $soname, PLX_API_VERSION $api: the same ABI as $(basename "$baseline")"
