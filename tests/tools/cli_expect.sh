# Sourced by the command-line tests of the installed tools (plexus_ckpt_test.sh,
# strategy_check_test.sh): run the tool, check its exit status and output.
# The sourcing script sets `tool_name` (for messages) and `tool` (the binary) and runs in a
# scratch folder: each command's stdout and stderr are left in ./out and ./err.

fail() { echo "FAIL: $*" >&2; exit 1; }

# expect CODE ARGS...: the tool run with ARGS exits with CODE.
expect() {
  local want=$1
  shift
  last="$tool_name $*"
  local code=0
  "$tool" "$@" >out 2>err || code=$?
  [[ $code == "$want" ]] || fail "'$last' exited $code, expected $want; stdout: $(tail -5 out); stderr: $(cat err)"
}

# has out|err REGEX: the last command's stdout or stderr has a line matching REGEX (grep -E).
has() {
  grep -qE -- "$2" "$1" || fail "the $1 of '$last' has no line matching /$2/: $(tail -5 "$1")"
}

# count out|err REGEX N: exactly N lines of the last command's stdout or stderr match REGEX.
count() {
  local n
  n=$(grep -cE -- "$2" "$1" || true)
  [[ $n == "$3" ]] || fail "the $1 of '$last' has $n lines matching /$2/, expected $3"
}
