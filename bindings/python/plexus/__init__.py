"""Plexus from Python: the IPU programming model of PopXL on ordinary CPUs, over the C ABI
(libplexus.so through cffi; no other path into the runtime).

    import numpy as np, plexus
    from plexus import ops

    ir = plexus.Ir(replication=2)
    with ir.main_graph:
        x_h2d = plexus.h2d_stream((4, 784), plexus.float32, name="x")
        w = plexus.variable(np.zeros((784, 10), np.float32), name="w")
        y = ops.matmul(ops.host_load(x_h2d), w)
        y_d2h = plexus.d2h_stream(y, name="y")
    with plexus.Session(ir, device_iterations=1) as session:
        out = session.run({x_h2d: np.ones((2, 4, 784), np.float32)})[y_d2h]   # [2, 4, 10]

The names follow PopXL (seeds 000 and 001): Ir, variable, remote_buffer, remote_variable,
replica_sharded_variable, remote_replica_sharded_variable, constant, h2d_stream,
d2h_stream, in_sequence, autodiff, ops.*, ops.collectives.*, Session; the graphs of its
user guide: Graph, Module, Ir.create_graph, graph_input, graph_output, ops.call,
ops.call_with_info, ops.repeat, transforms.autodiff; seed 003's Block and Stage. Every C
status is an exception class under plexus.Error. README "From Python" and
docs/python.md are the guide.
"""
from plexus._lib import lib as _lib
from plexus import callbacks as _callbacks  # noqa: F401  (registers the C entry points)
from plexus import dtypes
from plexus.dtypes import DType, float32, int32, uint8, float16, int8, uint32
from plexus.errors import (Error, InvalidArgument, UnknownOp, ShapeMismatch, DTypeMismatch, NotFound,
                           OutOfDeviceMemory, InvalidGrouping, IoError, BadFormat, RunError, PluginError, Timeout,
                           Cancelled, Unsupported, BufferTooSmall, StillRunning, InternalError)
from plexus.ir import Ir, ReplicaGrouping, Block, Stage, in_sequence
from plexus.graph import Graph, TensorByRef, graph_input, graph_output, gcg, gmg
from plexus.module import Module
from plexus.tensor import Tensor, TensorSpec, Variable, Constant, HostToDeviceStream, DeviceToHostStream, RemoteBuffer
from plexus.variables import (variable, constant, remote_buffer, replica_sharded_buffer, remote_variable,
                              replica_sharded_variable, remote_replica_sharded_variable, h2d_stream, d2h_stream,
                              autodiff)
from plexus import ops, transforms
from plexus.session import Session, Run
from plexus.data import Dataset, Loader, Text, TextWindows, FORTUNES_DIR


def runtime_info():
    """One line on the runtime: API version, BLIS, CPU features, GEMM kernel choice."""
    from plexus._lib import read_text
    return read_text(_lib.plx_runtime_get_info)


def api_version():
    """PLX_API_VERSION of the loaded libplexus.so."""
    return _lib.plx_version()


__version__ = "0.1.0"

__all__ = [
    "dtypes", "DType", "float32", "int32", "uint8", "float16", "int8", "uint32",
    "Error", "InvalidArgument", "UnknownOp", "ShapeMismatch", "DTypeMismatch", "NotFound", "OutOfDeviceMemory",
    "InvalidGrouping", "IoError", "BadFormat", "RunError", "PluginError", "Timeout", "Cancelled", "Unsupported",
    "BufferTooSmall", "StillRunning", "InternalError",
    "Ir", "ReplicaGrouping", "Block", "Stage", "in_sequence",
    "Graph", "TensorByRef", "graph_input", "graph_output", "gcg", "gmg", "Module", "transforms",
    "Tensor", "TensorSpec", "Variable", "Constant", "HostToDeviceStream", "DeviceToHostStream", "RemoteBuffer",
    "variable", "constant", "remote_buffer", "replica_sharded_buffer", "remote_variable", "replica_sharded_variable",
    "remote_replica_sharded_variable", "h2d_stream", "d2h_stream", "autodiff",
    "ops", "Session", "Run", "Dataset", "Loader", "Text", "TextWindows", "FORTUNES_DIR", "runtime_info", "api_version",
]
