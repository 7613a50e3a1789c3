"""plexus.ops.collectives: the ops between replicas (docs/ops.md "Collectives"; PopXL
popxl.ops.collectives), with PopXL's positional orders and reduction names:
replicated_all_reduce(t, op="add", group=None), replicated_all_reduce_(t, op="add",
group=None), replicated_all_gather(t, axis=0, group=None, output_shape="auto"),
replicated_reduce_scatter(t, op="add", group=None), replica_sharded_slice(t, group=None).
`group` is a ReplicaGrouping (default all replicas, or a replica-sharded tensor's shard
domain); each op runs within each group through the session's collectives plugin. Not
thread-safe (they add to the current Ir). Raise plexus.InvalidArgument for a reduction
Plexus does not run or an axis other than 0."""
from plexus import ops as _ops
from plexus.errors import InvalidArgument

# PopXL's reduction names (popxl CollectiveOps) -> the runtime's; "sum" is Plexus's own
# name for PopXL's "add". PopXL's "mul", "and", "or", "square_add" and "local" have no
# kernel (docs/python.md "Differences from PopXL").
_REDUCTIONS = {"add": "sum", "sum": "sum", "mean": "mean", "max": "max", "min": "min"}


def _reduction(name, op):
    try:
        return _REDUCTIONS[op]
    except (KeyError, TypeError):
        raise InvalidArgument(f"{name}: op {op!r} is not one of 'add' (or 'sum'), 'mean', 'max', 'min'") from None


def replicated_all_reduce(t, op="add", group=None, **kwargs):
    """Every replica of each group gets the group's reduction of `t` (seed 000 17.2): same
    shape and dtype (float32 or int32). op: "add" (also "sum"), "mean", "max", "min"."""
    return _ops.replicated_all_reduce(t, op=_reduction("replicated_all_reduce", op), group=group, **kwargs)


def replicated_all_reduce_(t, op="add", group=None, **kwargs):
    """replicated_all_reduce written over `t` in place; returns `t`'s new version."""
    return _ops.replicated_all_reduce_(t, op=_reduction("replicated_all_reduce_", op), group=group, **kwargs)


def replicated_all_gather(t, axis=0, group=None, output_shape="auto", **kwargs):
    """The group's values of `t`, member order (seed 001 13.2). output_shape: "auto" (a
    replica-sharded `t`: the full tensor in its shape; else "new_axis"), "new_axis"
    ([g] + t.shape) or "concat" (along axis 0). Only axis 0 is gathered along."""
    if axis != 0:
        raise InvalidArgument(f"replicated_all_gather: axis {axis!r}: Plexus gathers along axis 0 only")
    return _ops.replicated_all_gather(t, group=group, output_shape=output_shape, **kwargs)


def replicated_reduce_scatter(t, op="add", group=None, **kwargs):
    """This replica's shard of the group's reduction of `t` (seed 000 17.2; RTS): [c] with
    c = ceil(nelms / g). op: "add" (also "sum") or "mean"."""
    return _ops.replicated_reduce_scatter(t, op=_reduction("replicated_reduce_scatter", op), group=group, **kwargs)


def replica_sharded_slice(t, group=None, **kwargs):
    """This replica's shard of `t`, no communication: [c] with c = ceil(nelms / g)."""
    return _ops.replica_sharded_slice(t, group=group, **kwargs)
