#!/usr/bin/env bash
# Tests of plexus-strategy-check (tools/strategy_check): the shipped strategies pass over the
# whole grid (746 problems: the pipelined one refuses the 258 with M < S), the mock strategy
# that breaks rule 'backward' fails on every training problem and no other, a plugin that
# does not load or has a bad table is one clear error (exit 1), a bad command line exit 2.
# Usage: strategy_check_test.sh <plexus-strategy-check> <pipelined .so> <sharded .so> <mock plugin dir>
set -euo pipefail
here=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
usage="usage: strategy_check_test.sh <plexus-strategy-check> <pipelined .so> <sharded .so> <mock plugin dir>"
check=$(realpath "${1:?$usage}")
pipelined=$(realpath "${2:?$usage}")
sharded=$(realpath "${3:?$usage}")
mocks=$(realpath "${4:?$usage}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
unset PLEXUS_STRATEGY_PLUGIN

tool_name=plexus-strategy-check tool=$check
# shellcheck source=tests/tools/cli_expect.sh
source "$here/cli_expect.sh"

# --- command line
expect 0 --help
has out "^Usage: plexus-strategy-check --plugin"
has out "^  --micro-batches LIST"
expect 2
has err "no plugin given: --plugin PATH \(or PLEXUS_STRATEGY_PLUGIN\) is missing"
has err "^Usage: "
expect 2 --plugin
has err "--plugin needs a value"
expect 2 --plugin "$sharded" --frobnicate
has err "unknown argument '--frobnicate'"
expect 2 --plugin "$sharded" --stages 2,0
has err "--stages '2,0': '0' is not a whole number in \[1, 64\]"
expect 2 --plugin "$sharded" --micro-batches=4,x
has err "--micro-batches '4,x': 'x' is not a whole number"

# --- the shipped strategies: every schedule passes
expect 0 --plugin "$sharded"
has out "^strategy plugin under test: sharded \($sharded\), options ''$"
has out "^746 of 746 schedules pass$"
count out "^FAIL" 0
expect 0 --plugin="$pipelined"
has out "^258 of 746 problems refused by the plugin \(PLX_ERR_INVALID_ARGUMENT\), not counted; --verbose lists them$"
has out "^488 of 488 schedules pass$"
PLEXUS_STRATEGY_PLUGIN=$pipelined expect 0 --options fill_drain --stages 2,4 --micro-batches 4,8 --verbose
has out "options 'fill_drain'$"
count out "^ok " 48
# GPipe, 4 stages on 4 devices, 4 micro-batches: forwards end at 7, backwards at 14, U(0) at 15;
# 36 steps in 4 x 15 device units.
has out "^ok training S=4 D=4 M=4 stages on devices \[0,1,2,3\] \(one per device\): makespan 15, bubble 0.400, peak in flight 4$"
has out "^ok inference S=2 D=1 M=8 stages on devices \[0,0\] \(all on one\): makespan 16, bubble 0.000, peak in flight 1$"
has out "^48 of 48 schedules pass$"
# docs/plugins.md's example: 1F1B has the makespan of GPipe and half its activations in flight.
for flavour in fill_drain:8 1f1b:4; do
  expect 0 --plugin "$pipelined" --options "${flavour%:*}" --stages 4 --micro-batches 8 --verbose
  has out "^ok training S=4 D=4 M=8 stages on devices \[0,1,2,3\] \(one per device\): makespan 23, bubble 0.261, peak in flight ${flavour#*:}$"
done
expect 1 --plugin "$pipelined" --stages 3 --micro-batches 1 --verbose
count out "^refused .*pipelined execution needs at least as many micro-batches" 12
has out "^0 of 0 schedules pass$"
has err "nothing was checked: the plugin refused every problem of the grid"
expect 1 --plugin "$sharded" --options fast
has out "^746 of 746 problems refused"
has err "nothing was checked"

# --- the mock strategy breaks rule 'backward' whenever it trains
expect 1 --plugin "$mocks/libplexus-strategy-mock_bad.so"
count out "^FAIL training .*: schedule from 'mock_bad' breaks rule 'backward': " 373
count out "^FAIL inference" 0
has out "^FAIL training S=1 D=1 M=1 stages on devices \[0\] \(all on one\): schedule from 'mock_bad' breaks rule 'backward': B\(0,0\) is listed before F\(0,0\), which it waits for, on device 0$"
has out "^373 of 746 schedules pass$"

# --- plugins that cannot be checked: one message naming the path and the problem
expect 1 --plugin "$mocks/libplexus-strategy-mock_wrong_abi.so"
has err "^plexus-strategy-check: strategy plugin $mocks/libplexus-strategy-mock_wrong_abi.so: ABI version 99, this Plexus needs 1$"
expect 1 --plugin "$tmp/no_such_plugin.so"
has err "^plexus-strategy-check: strategy plugin $tmp/no_such_plugin.so: no such file$"
expect 1 --plugin "$mocks/libplexus-collectives-mock_wrong_abi.so"
has err "^plexus-strategy-check: plugin $mocks/libplexus-collectives-mock_wrong_abi.so does not export the symbol 'plx_strategy_plugin_v1'"
echo "not a library" > not_a_library.so
expect 1 --plugin "$tmp/not_a_library.so"
has err "^plexus-strategy-check: strategy plugin: cannot load $tmp/not_a_library.so: "
expect 1 --plugin "$tmp"
has err "^plexus-strategy-check: strategy plugin $tmp: not a file$"
echo "strategy_check_test: all passed"
