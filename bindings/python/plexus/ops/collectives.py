"""plexus.ops.collectives: the ops between replicas (docs/ops.md "Collectives"; PopXL
popxl.ops.collectives). Each takes an optional `group` (a ReplicaGrouping, PopXL's
argument; default all replicas, or a replica-sharded tensor's shard domain) and runs
within each group through the session's collectives plugin."""
from plexus import ops as _ops

replicated_all_reduce = _ops.replicated_all_reduce
replicated_all_reduce_ = _ops.replicated_all_reduce_
replicated_all_gather = _ops.replicated_all_gather
replicated_reduce_scatter = _ops.replicated_reduce_scatter
replica_sharded_slice = _ops.replica_sharded_slice
