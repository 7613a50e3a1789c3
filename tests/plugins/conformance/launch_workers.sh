#!/usr/bin/env bash
# launch_workers.sh [--file-store] N COMMAND [ARGS...]: runs COMMAND as N workers of one job
# on this host, started separately (no mpirun), as the Gloo plugin's users start them:
# worker i gets PLEXUS_CLUSTER='{"workers": ["127.0.0.1:P0", ...], "index": i}' (loopback
# only, worker 0's store on a free port). --file-store adds "rendezvous": a fresh folder,
# removed at the end, so the workers meet through Gloo's file store instead. Each worker's
# output is prefixed with "[worker i] "; exits 0 when every worker does, else 1 naming the
# ones that failed.
set -uo pipefail
rendezvous=""
if [[ ${1:-} == --file-store ]]; then
  rendezvous=$(mktemp -d "${TMPDIR:-/tmp}/plexus_rendezvous.XXXXXX")
  trap 'rm -rf "$rendezvous"' EXIT
  shift
fi
if [[ $# -lt 2 || ! $1 =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: launch_workers.sh [--file-store] N COMMAND [ARGS...]   (N >= 1 workers)" >&2
  exit 2
fi
n=$1
shift
# Free loopback ports, one per worker (only worker 0's is listened on; the others name the workers).
ports=$(/usr/bin/python3 -c "
import socket
socks = [socket.socket() for _ in range($n)]
for s in socks: s.bind(('127.0.0.1', 0))
print(' '.join(str(s.getsockname()[1]) for s in socks))")
workers=""
for p in $ports; do workers+="${workers:+, }\"127.0.0.1:$p\""; done
pids=()
for ((i = 0; i < n; i++)); do
  PLEXUS_CLUSTER="{\"workers\": [$workers], \"index\": $i${rendezvous:+, \"rendezvous\": \"$rendezvous\"}}" "$@" 2>&1 | sed -u "s/^/[worker $i] /" &
  pids+=($!)
done
failed=()
for ((i = 0; i < n; i++)); do
  wait "${pids[$i]}" || failed+=("$i")
done
if ((${#failed[@]} > 0)); then
  echo "launch_workers.sh: worker(s) ${failed[*]} of $n failed: $*" >&2
  exit 1
fi
