"""`import popxl`: PopXL's API (Graphcore's popart repository, python/popxl; its user guide)
over the `plexus` package, so that PopXL programs run on Plexus's virtual CPU devices.

Everything is the `plexus` implementation under PopXL's names; what PopXL spells
differently lives here: Ir.num_host_transfers and replication="popdist" (popxl.ir),
d2h_stream(shape, dtype, name) with ops.host_store (popxl.streams), and Session(ir,
device_desc) with PopXL's attach / detach context (popxl.session). docs/python.md,
"import popxl", lists what is covered and every remaining difference."""
from plexus import (Graph, Module, TensorByRef, Tensor, TensorSpec, ReplicaGrouping, constant, variable,
                    remote_buffer, replica_sharded_buffer, remote_variable, replica_sharded_variable,
                    remote_replica_sharded_variable, graph_input, graph_output, gcg, gmg, in_sequence, h2d_stream,
                    RemoteBuffer)
from plexus import context as _context
from plexus.tensor import HostToDeviceStream
from popxl import dtypes
from popxl.dtypes import (dtype, bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64,  # noqa: A004
                          half, float16, float, float32, double, float64, complex64, complex128)
from popxl.ir import Ir
from popxl.streams import DeviceToHostStream, d2h_stream
from popxl.session import Session
from popxl import ops, tensor, transforms, utils
from popxl.context import ipu, io_tiles, name_scope
from popxl.random_seed import create_seeds
from popxl.tensorlocation import (TensorLocation, TensorStorage, TileSet, ExecutionContext,
                                  ReplicatedTensorSharding)

get_current_graph = gcg
get_main_graph = gmg


def get_ir():
    """The Ir of the current graph (PopXL popxl.get_ir / gir). Raises plexus.InvalidArgument
    when no graph is open."""
    return _context.current_ir()


gir = get_ir

__all__ = [
    "Graph", "Module", "TensorByRef", "Tensor", "TensorSpec", "ReplicaGrouping", "constant", "variable",
    "remote_buffer", "replica_sharded_buffer", "remote_variable", "replica_sharded_variable",
    "remote_replica_sharded_variable", "graph_input", "graph_output", "gcg", "gmg", "in_sequence", "h2d_stream",
    "HostToDeviceStream", "DeviceToHostStream", "d2h_stream", "dtypes", *dtypes.__all__, "Ir",
    "Session", "ops", "tensor", "transforms", "utils", "RemoteBuffer", "get_current_graph", "get_main_graph",
    "get_ir", "gir", "ipu", "io_tiles", "name_scope", "create_seeds", "TensorLocation", "TensorStorage", "TileSet",
    "ExecutionContext", "ReplicatedTensorSharding",
]
