#!/usr/bin/env bash
# Multi-host on one machine (issue 18): two network namespaces joined by a veth pair, one
# address each, stand for two hosts; samples/distributed_training runs one worker in each,
# the traffic between them crossing the veth over TCP, and must end with the weights of one
# process hosting the same replicas (1 worker x 2 replicas), bit for bit.
#  - launch_mpi: Open MPI, a hostfile with the two addresses (slots=1 each), TCP only
#    (btl tcp,self) on the veth's subnet for the data and Open MPI's own control messages;
#    mpirun runs in the first namespace and starts its daemon in the second through a
#    launch agent (plm_rsh_agent) that stands in for ssh: `agent HOST COMMAND...` runs
#    COMMAND inside HOST's namespace.
#  - launch_gloo: the Gloo collectives plugin, each worker started on its own (no mpirun)
#    with PLEXUS_CLUSTER naming both addresses; worker 0 serves the rendezvous store.
#  - the veth's byte counters in both namespaces must have grown by at least the gradient
#    traffic: every step, each worker needs the other's whole gradient (parameters x 4
#    bytes) to form the sum, so each end receives and sends at least steps x that.
# Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN, `ip`, `unshare`); elsewhere it prints
# "SKIP: ..." and exits 77 (ctest's SKIP_RETURN_CODE). Everything it creates (namespaces,
# veth, processes inside them, temporary files) goes in the EXIT trap, on failure too.
# The addresses exist only inside the two namespaces; nothing else is contacted.
# Usage: multihost_test.sh <distributed_training> <data dir> <mpirun>
set -euo pipefail
bin=$1
data=$2
mpirun=$3
# 200 steps (20 runs of 10 device iterations), 40 in sanitizer builds (scripts/test.sh).
if [[ ${PLEXUS_SANITIZED:-0} == 1 ]]; then steps=40; else steps=200; fi
steps=${PLEXUS_MULTIHOST_STEPS:-$steps}
run_timeout=${PLEXUS_MULTIHOST_TIMEOUT:-120}  # seconds per launch; ctest's TIMEOUT is above the sum
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }

# --- the two "hosts" ---------------------------------------------------------------------
[[ $(id -u) -eq 0 ]] || skip "needs root to create network namespaces (ip netns add); run as root or in CI"
command -v ip >/dev/null || skip "no 'ip' command (iproute2)"
command -v unshare >/dev/null || skip "no 'unshare' command (util-linux)"
tag=$$
ns_a=plx_mh_${tag}_a
ns_b=plx_mh_${tag}_b
if_a=plxmh${tag}a  # at most 15 characters: "plxmh" + a PID of at most 7 digits + 1
if_b=plxmh${tag}b
net=10.213.$((tag % 250 + 1))  # a private /24, only inside the two namespaces
addr_a=$net.1
addr_b=$net.2
name_a=plx-mh-${tag}-a  # host names, each in a UTS namespace of its own
name_b=plx-mh-${tag}-b
tmp=$(mktemp -d)
child=  # the running `bounded` command
cleanup() {
  local ns
  [[ -n $child ]] && kill -TERM "$child" 2>/dev/null
  for ns in "$ns_a" "$ns_b"; do
    if ip netns list 2>/dev/null | grep -qw "$ns"; then
      # Processes the test started there (a worker left behind by a failure or a timeout).
      ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
      ip netns del "$ns" 2>/dev/null || true  # deletes its end of the veth, and so the pair
    fi
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM  # leave through the EXIT trap

# bounded CMD...: CMD within run_timeout seconds (status 124 past it), waited for in the
# background so that a signal to the test is handled at once, not when CMD ends.
bounded() {
  timeout "$run_timeout" "$@" &
  child=$!
  local status=0
  wait "$child" || status=$?
  child=
  return "$status"
}

if ! err=$(ip netns add "$ns_a" 2>&1); then
  skip "ip netns add is not permitted here ($err)"
fi
ip netns add "$ns_b"
ip link add "$if_a" netns "$ns_a" type veth peer name "$if_b" netns "$ns_b"
ip -n "$ns_a" addr add "$addr_a/24" dev "$if_a"
ip -n "$ns_b" addr add "$addr_b/24" dev "$if_b"
for ns_if in "$ns_a:$if_a" "$ns_b:$if_b"; do
  ip -n "${ns_if%%:*}" link set lo up
  ip -n "${ns_if%%:*}" link set "${ns_if#*:}" up
done
if command -v ping >/dev/null; then
  ip netns exec "$ns_a" ping -c 1 -W 5 "$addr_b" >/dev/null || fail "$addr_a cannot reach $addr_b over the veth"
fi
echo "hosts: $name_a = $addr_a in namespace $ns_a ($if_a), $name_b = $addr_b in namespace $ns_b ($if_b), joined by a veth pair"

# bytes NS IF rx|tx: the interface's byte counter inside the namespace.
bytes() { ip netns exec "$1" cat "/sys/class/net/$2/statistics/$3_bytes"; }

# --- the training, and the reference -----------------------------------------------------
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The recipe of distributed_training_sample_test.sh, where 2 workers x 1 replica equal
# 1 worker x 2 replicas bit for bit.
train_args=(--data-dir "$data" --num-steps "$steps" --skip-test --threads-per-device 1)

start=$(date +%s)
bounded "$bin" "${train_args[@]}" --replication-factor 2 --weights-out "$tmp/one_process.bin" \
  >"$tmp/one_process.log" 2>&1 || { cat "$tmp/one_process.log" >&2; fail "the one-process run failed"; }
grep -E "^trained" "$tmp/one_process.log" || fail "the one-process run did not train"
params=$(($(stat -c %s "$tmp/one_process.bin") / 4))
echo "one process, 2 replicas: $params parameters, $steps steps in $(($(date +%s) - start)) s," \
  "sha256 $(sha256sum <"$tmp/one_process.bin" | cut -c1-64)"

# launch_<engine> OUT: runs the 2 workers, one per namespace, worker 0 writing its weights
# to OUT; its output goes to stdout.

launch_mpi() {
  local out=$1
  # The launch agent, in place of ssh: Open MPI's rsh launcher calls `agent HOST COMMAND...`
  # (COMMAND as words for a remote shell to join and parse). It runs COMMAND in HOST's
  # namespace, under a host name of its own (a UTS namespace) as a real host has: the two
  # network namespaces otherwise share the machine's name, and Open MPI groups ranks into
  # nodes by name (ranks it takes for one node may use shared memory, not the network).
  # The names have no dots: Open MPI cuts a host name at its first dot.
  cat >"$tmp/agent.sh" <<EOF
#!/bin/sh
host=\$1
shift
case \$host in
  $addr_a) ns=$ns_a name=$name_a ;;
  $addr_b) ns=$ns_b name=$name_b ;;
  *) echo "agent.sh: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" unshare --uts sh -c "hostname \$name && \$*"
EOF
  chmod +x "$tmp/agent.sh"
  printf '%s slots=1\n%s slots=1\n' "$addr_a" "$addr_b" >"$tmp/hosts.txt"
  # mpirun itself runs in the first namespace, under its own host name too.
  # shellcheck disable=SC2054  # "tcp,self" is one argument
  local mpirun_cmd=(
    "$mpirun" --hostfile "$tmp/hosts.txt" -np 2
    --mca plm_rsh_agent "$tmp/agent.sh" --mca plm_rsh_no_tree_spawn 1
    --mca btl tcp,self --mca btl_tcp_if_include "$net.0/24" --mca oob_tcp_if_include "$net.0/24"
    "$bin" "${train_args[@]}" --weights-out "$out")
  echo "mpirun (in $ns_a): ${mpirun_cmd[*]}"
  # shellcheck disable=SC2016  # $0 and $@ are the inner shell's
  bounded ip netns exec "$ns_a" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$name_a" "${mpirun_cmd[@]}"
}

# Gloo: each worker started on its own in its namespace, no mpirun, as two shells on two
# hosts would (README "Multi-host"): the cluster definition names both addresses, worker 0
# serves the rendezvous store on its port, and Gloo's TCP pairs listen on each worker's own
# address only.
launch_gloo() {
  local out=$1 cluster k status=0 pids=()
  for k in 0 1; do
    cluster="{\"workers\": [\"$addr_a:29500\", \"$addr_b:29500\"], \"index\": $k}"
    local ns=$ns_a
    [[ $k -eq 1 ]] && ns=$ns_b
    echo "worker $k (in $ns): PLEXUS_CLUSTER='$cluster' $bin --collectives gloo ${train_args[*]}"
    local args=("${train_args[@]}")
    [[ $k -eq 0 ]] && args+=(--weights-out "$out")
    timeout "$run_timeout" ip netns exec "$ns" env PLEXUS_CLUSTER="$cluster" "$bin" --collectives gloo "${args[@]}" \
      >"$tmp/gloo_worker$k.log" 2>&1 &
    pids+=($!)
  done
  for k in 0 1; do wait "${pids[$k]}" || status=$?; done
  cat "$tmp/gloo_worker0.log"
  [[ $status -eq 0 ]] || cat "$tmp/gloo_worker1.log"
  return "$status"
}

engines=(mpi gloo)

# check_engine ENGINE: launch_ENGINE's weights equal the one-process run's, and the veth
# carried at least the gradient traffic in both directions.
check_engine() {
  local engine=$1 out="$tmp/$1.bin" t0 elapsed
  local rx_a0 tx_a0 rx_b0 tx_b0 rx_a tx_a rx_b tx_b
  rx_a0=$(bytes "$ns_a" "$if_a" rx) tx_a0=$(bytes "$ns_a" "$if_a" tx)
  rx_b0=$(bytes "$ns_b" "$if_b" rx) tx_b0=$(bytes "$ns_b" "$if_b" tx)
  t0=$(date +%s)
  local status=0
  "launch_$engine" "$out" >"$tmp/$engine.log" 2>&1 || status=$?
  if [[ $status -ne 0 ]]; then
    cat "$tmp/$engine.log" >&2
    [[ $status -eq 124 ]] && fail "$engine: the two-namespace run did not end within $run_timeout s"
    fail "$engine: the two-namespace run failed (status $status)"
  fi
  elapsed=$(($(date +%s) - t0))
  grep -E "^(mpirun|worker [01] \\(in|trained|[0-9]+ worker)" "$tmp/$engine.log" || true
  grep -qE "^trained: 2 worker\(s\) x 1 replica\(s\), $steps steps" "$tmp/$engine.log" ||
    { cat "$tmp/$engine.log" >&2; fail "$engine: worker 0 did not report 2 workers x 1 replica, $steps steps"; }
  rx_a=$(($(bytes "$ns_a" "$if_a" rx) - rx_a0)) tx_a=$(($(bytes "$ns_a" "$if_a" tx) - tx_a0))
  rx_b=$(($(bytes "$ns_b" "$if_b" rx) - rx_b0)) tx_b=$(($(bytes "$ns_b" "$if_b" tx) - tx_b0))
  local least=$((steps * params * 4))
  echo "$engine: 2 workers in 2 namespaces, $steps steps in $elapsed s, sha256 $(sha256sum <"$out" | cut -c1-64)"
  echo "$engine: veth bytes: $if_a ($addr_a) rx $rx_a tx $tx_a; $if_b ($addr_b) rx $rx_b tx $tx_b;" \
    "gradient traffic at least $least each way ($steps steps x $params parameters x 4 bytes)"
  local n
  for n in "$rx_a" "$tx_a" "$rx_b" "$tx_b"; do
    [[ $n -ge $least ]] || fail "$engine: the veth carried less than the gradient traffic ($n < $least bytes)"
  done
  cmp "$out" "$tmp/one_process.bin" ||
    fail "$engine: 2 workers in 2 namespaces differ from 1 process x 2 replicas"
  echo "ok: $engine: 2 workers over the veth = 1 process x 2 replicas bit for bit after $steps steps"
}

for engine in "${engines[@]}"; do check_engine "$engine"; done
echo "multihost_test.sh: passed (${engines[*]}) in $(($(date +%s) - start)) s"
