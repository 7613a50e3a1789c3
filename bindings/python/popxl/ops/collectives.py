"""popxl.ops.collectives: the collectives of plexus.ops.collectives, PopXL's positional orders."""
from plexus.ops.collectives import (replicated_all_reduce, replicated_all_reduce_,  # noqa: F401
                                    replicated_all_gather, replicated_reduce_scatter, replica_sharded_slice)

__all__ = ["replicated_all_reduce", "replicated_all_reduce_", "replicated_all_gather",
           "replicated_reduce_scatter", "replica_sharded_slice"]
