#!/usr/bin/env bash
# The soak's 2-minute version for CI (issue 21; bench/soak.sh, bench/README.md "soak.sh"):
# mnist_pipeline and distributed_training (2 workers over gloo, no mpirun) train side by
# side for 2 minutes with a checkpoint every 5 s and a sample every 5 s; the verdict is
# soak.sh's with its defaults (RSS growth under 1 % from the first sample after the
# warm-up to the last, besides the largest single step; descriptors and threads constant,
# every checkpoint verified by plexus-ckpt, every process alive to the end). The warm-up is
# soak.sh's default: until each program has saved twice, past its first epoch (~40-50 s
# here). Saves every 5 s, not every 15 or 30: in the first saves distributed_training's
# worker 0 steps up by 1.3 MB (a save's out-of-order frames wait in memory, and glibc keeps
# them resident) up to 3 times; with 20+ saves in 2 minutes those fall in the warm-up, and
# one that comes after it (+0.5 % seen at 5 s, +1.23 % at 15 s) is the step the verdict
# leaves out. A leak of 80 kB per save still exceeds 1 % (~14 saves of ~105 MB processes
# after the warm-up). On a machine so busy that it does not end
# in time (distributed_training's first epoch is 460 steps) soak.sh says "inconclusive"
# (exit 3) and the test is skipped, not failed; a failed check still fails it.
# Skipped (exit 77) under sanitizers (PLEXUS_SANITIZED=1): ASan's quarantine holds freed
# memory back (up to 256 MB) and its allocator is not glibc's, so RSS there measures ASan;
# the descriptor and thread checks would repeat this build's; and 2 minutes of Debug ASan
# training would add CPU time to CI's sanitizer pass for no new information.
# Usage: soak_short_test.sh <source dir> <mnist_pipeline> <distributed_training> <plexus-ckpt> <data dir>
set -euo pipefail
if [[ $# -ne 5 ]]; then
  echo "usage: soak_short_test.sh <source dir> <mnist_pipeline> <distributed_training> <plexus-ckpt> <data dir>" >&2
  exit 2
fi
src=$1
if [[ ${PLEXUS_SANITIZED:-0} == 1 ]]; then
  echo "skipped: RSS under AddressSanitizer measures ASan's quarantine, not Plexus (see the header)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
DURATION=2m CHECKPOINT_INTERVAL=5s SAMPLE_INTERVAL=5s ENGINE=gloo OUT_DIR=$tmp \
  MNIST_PIPELINE=$2 DISTRIBUTED_TRAINING=$3 PLEXUS_CKPT=$4 DATA_DIR=$5 bash "$src/bench/soak.sh" || status=$?
if ((status == 3)); then  # inconclusive: nothing failed, but the warm-up left too little to judge
  echo "skipped: the warm-up did not end in 2 minutes (the machine is too busy to judge RSS; nothing failed)"
  exit 77
fi
if ((status != 0)); then
  for log in "$tmp"/logs/*.log; do
    echo "== tail of $log" >&2
    tail -n 20 "$log" >&2
  done
  echo "FAIL: bench/soak.sh exited $status" >&2
  exit 1
fi
