#!/usr/bin/env bash
# The same bits on every run (issue 37): each sample that writes --weights-out, run twice
# with its default options and once each at --threads-per-device 1 and 2 and at
# --prefetch-depth 0 and 2 (where it takes the option), with no environment variable
# pinning anything (BLIS_ARCH_TYPE is removed from the environment), writes the same bytes
# every time. GEMM kernels are chosen by rule from the CPU and the shape
# (core/ops/matmul/gemm.cpp), a GEMM's thread count splits C without changing any element's sum,
# and reductions run in member order, so nothing may differ. Prints a table.
# Usage: reproducibility_test.sh <mnist> <mnist_rts> <mnist_pipeline> <char_gpt> <distributed_training> <data dir>
set -euo pipefail
declare -A bin=([mnist]=$1 [mnist_rts]=$2 [mnist_pipeline]=$3 [char_gpt]=$4 [distributed_training]=$5)
data=$6
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
unset BLIS_ARCH_TYPE
# Short runs: enough steps for a kernel difference to reach the weights (one ulp in one
# GEMM changes the bytes written).
declare -A args=(
  [mnist]="--data-dir $data --num-steps 150"
  [mnist_rts]="--data-dir $data --num-steps 150 --replication-factor 2 --batch-size 4 --rts"
  [mnist_pipeline]="--data-dir $data --num-steps 6 --device-iterations 2"
  [char_gpt]="--num-steps 20 --warmup-steps 5"
  [distributed_training]="--data-dir $data --num-steps 40 --skip-test"
)
variants=("again" "--threads-per-device 1" "--threads-per-device 2" "--prefetch-depth 0" "--prefetch-depth 2")
printf '%-22s %-8s' sample default
for v in "${variants[@]}"; do printf ' %-24s' "$v"; done
echo
for s in mnist mnist_rts mnist_pipeline char_gpt distributed_training; do
  help=$("${bin[$s]}" --help)
  # shellcheck disable=SC2086 # the arguments are word lists
  "${bin[$s]}" ${args[$s]} --weights-out "$tmp/$s.default" >"$tmp/$s.log" 2>&1 || { cat "$tmp/$s.log" >&2; fail "$s failed"; }
  printf '%-22s %-8s' "$s" "$(stat -c %s "$tmp/$s.default")B"
  for i in "${!variants[@]}"; do
    v=${variants[$i]}
    option=${v%% *}
    if [[ $v != again && $help != *"$option"* ]]; then printf ' %-24s' "(no $option)"; continue; fi
    extra=()
    [[ $v != again ]] && read -ra extra <<<"$v"
    # shellcheck disable=SC2086
    "${bin[$s]}" ${args[$s]} "${extra[@]}" --weights-out "$tmp/$s.$i" >"$tmp/$s.log" 2>&1 ||
      { cat "$tmp/$s.log" >&2; fail "$s $v failed"; }
    if cmp -s "$tmp/$s.default" "$tmp/$s.$i"; then printf ' %-24s' "cmp-equal"; else
      echo; fail "$s with $v wrote other weights than its default run: $(cmp "$tmp/$s.default" "$tmp/$s.$i" || true)"
    fi
  done
  echo
done
echo "reproducibility: every run of every sample wrote the same weights"
