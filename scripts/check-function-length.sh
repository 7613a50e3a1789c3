#!/usr/bin/env bash
# Lists every function in core/ longer than 60 lines and exits 1 when there is one. A
# function's length is counted from the line of its name to the line of its closing brace
# (comments, blank lines and lambdas included), as Universal Ctags finds them (Debian package
# universal-ctags: --fields=+ne gives each function's first and last line). That is a line or
# two stricter than clang-tidy's readability-function-size, which counts from the opening
# brace, and it needs no compile: parsing every core file with clang-tidy took 161 s of CI.
# Usage: scripts/check-function-length.sh [file...]   (default: git's core/*.cpp and core/*.h)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
limit=60
command -v ctags >/dev/null || { echo "check-function-length: ctags not found (Debian package universal-ctags)" >&2; exit 2; }
ctags --version | grep -q "Universal Ctags" ||
  { echo "check-function-length: ctags is not Universal Ctags (Debian package universal-ctags)" >&2; exit 2; }
cd "$root"
if [[ $# -eq 0 ]]; then
  mapfile -t files < <(git ls-files 'core/*.cpp' 'core/*.h')
else
  files=("$@")
fi
for f in "${files[@]}"; do
  [[ -r $f ]] || { echo "check-function-length: cannot read $f" >&2; exit 2; }
done
echo "check-function-length: ${#files[@]} file(s), limit $limit lines"
# One line per function: <file>:<first line> '<name>' <length> lines.
found=$(ctags -x --languages=C++ --language-force=C++ --kinds-C++=f --fields=+ne --_xformat='%n %e %F %N' \
  -o - "${files[@]}" | awk -v limit="$limit" '$2 - $1 > limit {print $3 ":" $1 " '\''" $4 "'\'' " $2 - $1 " lines"}')
if [[ -n $found ]]; then
  echo "$found"
  echo "check-function-length: $(wc -l <<<"$found") function(s) over $limit lines" >&2
  exit 1
fi
echo "check-function-length: no function over $limit lines"
