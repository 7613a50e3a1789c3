"""Variables, constants, remote buffers, replica-sharded variables, streams and autodiff:
PopXL's tensor-creating functions (seed 000 17.2; seed 001 13.2-13.4), added to the
current graph (`with ir.main_graph:`)."""
import numpy as np

from plexus import context, dtypes
from plexus.errors import DTypeMismatch, InvalidArgument, ShapeMismatch
from plexus._lib import ffi, lib, check, shape_array
from plexus.tensor import Tensor, Variable, Constant, HostToDeviceStream, DeviceToHostStream, RemoteBuffer

_RETRIEVAL_MODES = {"one_per_group": 0, "all_replicas": 1}


def _options(ir, replica_grouping, retrieval_mode, shard_over=None):
    """plx_variable_options for a grouping (default: all replicas), a retrieval mode and
    shard_over; returns (options, grouping or None) and keeps the grouping alive through
    the options' owner."""
    retrieval_mode = retrieval_mode or "one_per_group"
    if retrieval_mode not in _RETRIEVAL_MODES:
        raise InvalidArgument(f"retrieval_mode must be 'one_per_group' or 'all_replicas', not {retrieval_mode!r}")
    options = ffi.new("plx_variable_options*")
    lib.plx_variable_options_init(options)
    options.retrieval_mode = _RETRIEVAL_MODES[retrieval_mode]
    if replica_grouping is not None:
        if replica_grouping.replication_factor != ir.replication_factor:
            raise InvalidArgument(f"replica_grouping is for {replica_grouping.replication_factor} replicas, the IR "
                                  f"has replication factor {ir.replication_factor}")
        options.grouping = replica_grouping._c
    if shard_over is not None:
        options.shard_over = int(shard_over)
    return options


def _no_float8(what, log2_scale, nan_on_overflow):
    """PopXL's float8 arguments: Plexus has no float8, so only None is accepted."""
    if log2_scale is not None or nan_on_overflow is not None:
        raise InvalidArgument(f"{what}: log2_scale and nan_on_overflow are for float8 data, which Plexus does not have")


def _register(ir, tensor_id, name, replica_grouping, retrieval_mode):
    """The Variable of a new variable, listed in ir.variables with its grouping and
    retrieval mode (Variable.replica_grouping, Variable.retrieval_mode)."""
    t = Variable(ir, tensor_id, name)
    ir.variables.append(t)
    ir.variable_info[t.id] = (replica_grouping or ir.replica_grouping(), retrieval_mode or "one_per_group")
    return t


def _grouped_value(data, dtype, replica_grouping, what, downcast=True):
    """(array, per-group shape): the host value with its group dim when there are several
    groups ([num_groups] + shape, seed 001 13.2). Without `downcast`, 64-bit data keeps its
    dtype (and is refused: Plexus has no 64-bit dtypes)."""
    if dtype is None and not downcast:
        dtype = np.asarray(data).dtype
    try:
        array, dtype = dtypes.host_array(data, dtype)
    except (DTypeMismatch, InvalidArgument) as e:
        raise type(e)(f"{what}: data {data!r:.60}: {e}") from None
    groups = replica_grouping.num_groups if replica_grouping is not None else 1
    if groups == 1:
        return array, dtype, array.shape
    if array.ndim == 0 or array.shape[0] != groups:
        raise ShapeMismatch(f"{what}: a variable of {groups} groups takes data of shape [{groups}] + shape, "
                            f"got {list(array.shape)}")
    return array, dtype, array.shape[1:]


def _data_args(array):
    return ffi.from_buffer(array), array.nbytes


def variable(data, dtype=None, name=None, downcast=True, replica_grouping=None, retrieval_mode=None,
             log2_scale=None, nan_on_overflow=None):
    """A variable initialised from `data` (PopXL popxl.variable, its positional order; seed
    001 13.2-13.4).

    data: array-like, [num_groups] + shape when `replica_grouping` has several groups, else
      shape; copied. dtype: plexus.float32/int32/uint8 or a numpy dtype; default the data's,
      64-bit types downcast to 32 (`downcast`). name: unique in the IR (default "variable",
      numbered). replica_grouping: from ir.replica_grouping() (default: one group of all
      replicas). retrieval_mode: "one_per_group" (None, the default: reads give
      [num_groups] + shape, the group dim left out for one group) or "all_replicas" ([R] +
      shape). log2_scale, nan_on_overflow: PopXL's float8 arguments, None only.
    Returns the Variable. Raises InvalidArgument, InvalidGrouping, ShapeMismatch."""
    _no_float8("variable", log2_scale, nan_on_overflow)
    ir = context.current_ir()
    name = context.tensor_name(ir, name, "variable")
    array, dtype, shape = _grouped_value(data, dtype, replica_grouping, f"variable '{name}'", downcast)
    dims, rank = shape_array(shape)
    options = _options(ir, replica_grouping, retrieval_mode)
    out = ffi.new("plx_tensor*")
    check(lib.plx_ir_add_variable_with_options(ir._ptr, name.encode(), dtype.code, dims, rank, *_data_args(array),
                                               options, out))
    t = _register(ir, out[0], name, replica_grouping, retrieval_mode)
    return t


def constant(data, dtype=None, name=None, downcast=True, log2_scale=None, nan_on_overflow=None):
    """A read-only tensor resident on every device (PopXL popxl.constant, its positional
    order). data: array-like, copied; dtype and downcast as for variable(). `name` is for
    display only. Returns the Constant. Raises InvalidArgument, DTypeMismatch."""
    _no_float8("constant", log2_scale, nan_on_overflow)
    ir = context.current_ir()
    name = context.tensor_name(ir, name)
    array, dtype, _ = _grouped_value(data, dtype, None, f"constant '{name}'" if name else "constant", downcast)
    dims, rank = shape_array(array.shape)
    out = ffi.new("plx_tensor*")
    check(lib.plx_ir_add_constant(ir._ptr, dtype.code, dims, rank, *_data_args(array), out))
    ir.constants[out[0]] = array.copy()  # Session.get_tensor_data reads constants too (PopXL)
    return Constant(ir, out[0], name)


def remote_buffer(shape, dtype, entries=1):
    """A remote buffer (PopXL popxl.remote_buffer; seed 000 17.2, seed 001 listing 13.2):
    `entries` slots of `shape` (per replica, without a group dim) and `dtype` in host
    memory, one set per replica. Returns a RemoteBuffer (RemoteBuffer(shape, dtype, entries)
    is the same)."""
    return RemoteBuffer(shape, dtype, entries)


def replica_sharded_buffer(shape, dtype, replica_grouping=None, shard_over=None, entries=1):
    """A remote buffer for replica-sharded variables of full shape `shape` (PopXL
    popxl.replica_sharded_buffer): each slot holds one replica's shard,
    [ceil(numel / shard_over)] elements, shard_over defaulting to the grouping's group size
    (all R replicas without a grouping). Returns a RemoteBuffer for
    remote_replica_sharded_variable. Raises InvalidArgument (shard_over < 1)."""
    ir = context.current_ir()
    shard_over = int(shard_over or (replica_grouping.group_size if replica_grouping else ir.replication_factor))
    if shard_over < 1:
        raise InvalidArgument(f"replica_sharded_buffer: shard_over must be >= 1, got {shard_over}")
    numel = int(np.prod(shape, dtype=np.int64))
    return remote_buffer([-(-numel // shard_over)], dtype, entries)


def remote_variable(data, remote_buffer, offset=0, dtype=None, name=None, downcast=True, replica_grouping=None,
                    retrieval_mode=None, log2_scale=None, nan_on_overflow=None):
    """A variable kept in slot `offset` of `remote_buffer` (PopXL popxl.remote_variable, its
    positional order; seed 001 listing 13.2). data: [num_groups] + the slot shape. Ops
    reach it through ops.remote_load / ops.remote_store. The other arguments as for
    variable(). Returns the Variable (for reads and writes)."""
    _no_float8("remote_variable", log2_scale, nan_on_overflow)
    ir = context.current_ir()
    name = context.tensor_name(ir, name, "remote_variable")
    array, dtype, shape = _grouped_value(data, dtype or remote_buffer.dtype, replica_grouping,
                                         f"remote_variable '{name}'", downcast)
    dims, rank = shape_array(shape)
    options = _options(ir, replica_grouping, retrieval_mode)
    out = ffi.new("plx_tensor*")
    check(lib.plx_ir_add_remote_variable(ir._ptr, name.encode(), dtype.code, dims, rank, *_data_args(array),
                                         remote_buffer.id, int(offset), options, out))
    t = _register(ir, out[0], name, replica_grouping, retrieval_mode)
    return t


def replica_sharded_variable(data, dtype=None, name=None, downcast=True, replica_grouping=None, shard_over=None,
                             retrieval_mode=None, log2_scale=None, nan_on_overflow=None):
    """A replica-sharded variable (RTS; PopXL popxl.replica_sharded_variable, its positional
    order; seed 000 17.2 lines 83-88): the full value `data` is split over `shard_over`
    replicas (default the group size), each keeping [ceil(numel / shard_over)] elements.
    The other arguments as for variable(). Returns (variable, shard): read and write the
    variable (full tensors), use the shard in ops (e.g.
    ops.collectives.replicated_all_gather(shard))."""
    _no_float8("replica_sharded_variable", log2_scale, nan_on_overflow)
    ir = context.current_ir()
    name = context.tensor_name(ir, name, "replica_sharded_variable")
    array, dtype, shape = _grouped_value(data, dtype, replica_grouping, f"replica_sharded_variable '{name}'", downcast)
    dims, rank = shape_array(shape)
    options = _options(ir, replica_grouping, retrieval_mode, shard_over)
    var, shard = ffi.new("plx_tensor*"), ffi.new("plx_tensor*")
    check(lib.plx_ir_add_replica_sharded_variable(ir._ptr, name.encode(), dtype.code, dims, rank, *_data_args(array),
                                                  options, var, shard))
    t = _register(ir, var[0], name, replica_grouping, retrieval_mode)
    return t, Tensor(ir, shard[0], name)


def remote_replica_sharded_variable(data, remote_buffer, offset=0, dtype=None, name=None, downcast=True,
                                    replica_grouping=None, retrieval_mode=None, log2_scale=None,
                                    nan_on_overflow=None, shard_over=None):
    """A replica-sharded variable kept in slot `offset` of `remote_buffer`, whose slot shape
    is the shard's [ceil(numel / shard_over)] (PopXL popxl.remote_replica_sharded_variable,
    its positional order; seed 000 17.2 lines 101-113; `shard_over`, last, is Plexus's:
    default the group size). The other arguments as for variable(). Returns the Variable;
    ops.remote_load(buffer, offset) gives this replica's shard."""
    _no_float8("remote_replica_sharded_variable", log2_scale, nan_on_overflow)
    ir = context.current_ir()
    name = context.tensor_name(ir, name, "remote_replica_sharded_variable")
    array, dtype, shape = _grouped_value(data, dtype or remote_buffer.dtype, replica_grouping,
                                         f"remote_replica_sharded_variable '{name}'", downcast)
    dims, rank = shape_array(shape)
    options = _options(ir, replica_grouping, retrieval_mode, shard_over)
    out = ffi.new("plx_tensor*")
    check(lib.plx_ir_add_remote_replica_sharded_variable(ir._ptr, name.encode(), dtype.code, dims, rank,
                                                         *_data_args(array), remote_buffer.id, int(offset), options,
                                                         out))
    t = _register(ir, out[0], name, replica_grouping, retrieval_mode)
    return t


def h2d_stream(shape, dtype, name=None):
    """A host-to-device stream of `shape` (per step and replica) and `dtype` (PopXL
    popxl.h2d_stream). Its tensor is ops.host_load(stream). The host array a run takes is
    [device_iterations * gradient_accumulation, R] + shape with leading 1s dropped
    (Session.host_shape). Returns a HostToDeviceStream."""
    ir = context.current_ir()
    dtype = dtypes.of(dtype)
    name = context.tensor_name(ir, name, "input")
    dims, rank = shape_array(shape)
    stream, tensor = ffi.new("plx_stream*"), ffi.new("plx_tensor*")
    check(lib.plx_ir_add_h2d_stream(ir._ptr, name.encode(), dtype.code, dims, rank, stream, tensor))
    s = HostToDeviceStream(ir, stream[0], name, Tensor(ir, tensor[0], name))
    ir.h2d_streams.append(s)
    return s


def d2h_stream(t, name=None):
    """A device-to-host stream copying tensor `t` to the host each step, at this point of the
    program (PopXL popxl.d2h_stream + ops.host_store). Returns a DeviceToHostStream; the
    host array a run returns is Session.host_shape(stream)."""
    if not isinstance(t, Tensor):
        raise InvalidArgument(f"d2h_stream takes a Tensor, got {t!r}")
    ir = t.ir
    name = name or ir.unique_name(f"{t.name}_d2h" if t.name else "output")
    stream = ffi.new("plx_stream*")
    check(lib.plx_ir_add_d2h_stream(ir._ptr, name.encode(), t.id, stream))
    s = DeviceToHostStream(ir, stream[0], name, t)
    ir.d2h_streams.append(s)
    return s


def autodiff(loss, wrt):
    """Gradients of scalar `loss` with respect to each tensor of `wrt` (reverse-mode; the
    ops are added to the graph). Returns a list of Tensors in the order of `wrt`.
    Raises InvalidArgument (loss not a scalar float32, a tensor of another IR)."""
    ir = loss.ir
    wrt = list(wrt)
    ids = ffi.new("plx_tensor[]", [t.id for t in wrt] or [0])
    out = ffi.new("plx_tensor[]", max(len(wrt), 1))
    check(lib.plx_ir_autodiff(ir._ptr, loss.id, ids, len(wrt), out))
    return [Tensor(ir, out[i], f"grad_{t.name}" if t.name else None) for i, t in enumerate(wrt)]
