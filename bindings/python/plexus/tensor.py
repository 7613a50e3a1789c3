"""Tensors, streams and remote buffers: handles into one Ir (ids of the C API).

Every object keeps its Ir alive, so a tensor never outlives the IR it names."""
import typing

from plexus import dtypes
from plexus._lib import ffi, lib, check


class TensorSpec(typing.NamedTuple):
    """The type of a tensor without the tensor (PopXL popxl.TensorSpec): `shape` (tuple of
    ints), `dtype` (plexus.DType), `meta_shape` (a replica-sharded tensor's full shape;
    () otherwise). Ir.create_graph takes it where it takes a Tensor."""

    shape: tuple
    dtype: dtypes.DType
    meta_shape: tuple = ()


class Tensor:
    """A tensor of an Ir: `id` (plx_tensor), `dtype` (plexus.DType), `shape` (tuple of ints,
    per replica), `spec`, and PopXL's `T`, `transpose`, `reshape`, `flatten`. Arithmetic
    operators add ops to the current graph as PopXL's do: `+ - * /` (add/sub/mul/div),
    unary `-` (neg), `@` (matmul), `+=` (add_, in place; the name keeps naming this
    tensor, as in PopXL). Not thread-safe (neither is the Ir)."""

    __slots__ = ("ir", "id", "_type", "name")

    def __init__(self, ir, tensor_id, name=None):
        self.ir, self.id, self._type, self.name = ir, int(tensor_id), None, name

    def _read_type(self):
        if self._type is None:
            dtype = ffi.new("plx_dtype*")
            dims = ffi.new("int64_t[]", lib.PLX_MAX_RANK)
            rank = ffi.new("size_t*")
            check(lib.plx_ir_get_tensor_type(self.ir._ptr, self.id, dtype, dims, lib.PLX_MAX_RANK, rank))
            self._type = (dtypes.from_code(dtype[0]), tuple(dims[i] for i in range(rank[0])))
        return self._type

    @property
    def dtype(self):
        """The element type (plexus.DType), as shape inference gave it."""
        return self._read_type()[0]

    @property
    def shape(self):
        """The shape per replica (tuple of ints; () for a scalar)."""
        return self._read_type()[1]

    @property
    def spec(self):
        """TensorSpec(shape, dtype) of this tensor (PopXL Tensor.spec)."""
        return TensorSpec(self.shape, self.dtype)

    @property
    def T(self):
        """The tensor with its axes reversed (PopXL Tensor.T; ops.transpose)."""
        return self.transpose()

    def transpose(self, permutation=None):
        """ops.transpose(self, permutation); None reverses the axes (PopXL Tensor.transpose)."""
        return _ops().transpose(self, perm=list(permutation or []))

    def reshape(self, shape):
        """ops.reshape(self, shape): a view of the same elements (PopXL Tensor.reshape)."""
        return _ops().reshape(self, shape=list(shape))

    def flatten(self):
        """The tensor as one dim, [nelms] (PopXL Tensor.flatten)."""
        return self.reshape([self.nelms])

    @property
    def rank(self):
        """len(shape)."""
        return len(self.shape)

    @property
    def nelms(self):
        """Elements per replica (the product of shape)."""
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __repr__(self):
        label = f" '{self.name}'" if self.name else ""
        return f"<plexus.Tensor {self.id}{label} {self.dtype.name}{list(self.shape)}>"

    def __hash__(self):
        return hash((id(self.ir), self.id))

    def __eq__(self, other):
        return isinstance(other, Tensor) and other.ir is self.ir and other.id == self.id

    # PopXL's tensor operators (popxl.Tensor.__add__ ...).
    def __add__(self, other):
        return _ops().add(self, other)

    def __radd__(self, other):
        return _ops().add(other, self)

    def __sub__(self, other):
        return _ops().sub(self, other)

    def __rsub__(self, other):
        return _ops().sub(other, self)

    def __mul__(self, other):
        return _ops().mul(self, other)

    def __rmul__(self, other):
        return _ops().mul(other, self)

    def __truediv__(self, other):
        return _ops().div(self, other)

    def __rtruediv__(self, other):
        return _ops().div(other, self)

    def __neg__(self):
        return _ops().neg(self)

    def __matmul__(self, other):
        return _ops().matmul(self, other)

    def __iadd__(self, other):
        _ops().add_(self, other)
        return self  # PopXL's `+=`: the name keeps the tensor, updated in place


class Variable(Tensor):
    """A variable (PopXL popxl.tensor.Variable): what plexus.variable and its remote and
    replica-sharded forms return (a replica-sharded variable's shard is a plain Tensor),
    with its `replica_grouping` and `retrieval_mode`."""

    __slots__ = ()

    @property
    def replica_grouping(self):
        """The ReplicaGrouping it was made with (all replicas by default)."""
        return self.ir.variable_info[self.id][0]

    @property
    def retrieval_mode(self):
        """"one_per_group" or "all_replicas" (seed 001 13.4)."""
        return self.ir.variable_info[self.id][1]


class Constant(Tensor):
    """A constant (PopXL popxl.tensor.Constant): what plexus.constant returns."""

    __slots__ = ()


def _ops():
    from plexus import ops
    return ops


class Stream:
    """A stream of an Ir: `id` (plx_stream), `name`, and the `tensor` it fills or copies;
    `dtype` and `shape` (per step and replica, S) are the tensor's. Hashable: streams key
    Session.run's inputs, outputs and callbacks."""

    __slots__ = ("ir", "id", "name", "tensor")

    def __init__(self, ir, stream_id, name, tensor):
        self.ir, self.id, self.name, self.tensor = ir, int(stream_id), name, tensor

    @property
    def dtype(self):
        """The element type of the stream's tensor."""
        return self.tensor.dtype

    @property
    def shape(self):
        """The stream's shape per step and replica (S)."""
        return self.tensor.shape

    def __repr__(self):
        return f"<plexus.{type(self).__name__} '{self.name}' {self.dtype.name}{list(self.shape)}>"


class HostToDeviceStream(Stream):
    """A host-to-device stream (PopXL popxl.HostToDeviceStream); its tensor is
    `ops.host_load(stream)`. Keys Session.run's inputs and fill callbacks."""

    __slots__ = ()


class DeviceToHostStream(Stream):
    """A device-to-host stream (PopXL popxl.DeviceToHostStream) copying `tensor` each step.
    Keys Session.run's outputs and deliver callbacks."""

    __slots__ = ()


class RemoteBuffer:
    """A remote buffer (PopXL popxl.RemoteBuffer; seed 000 17.2): `entries` slots of
    `shape` and `dtype` per replica, in host memory. `id` is the plx_remote_buffer."""

    __slots__ = ("ir", "id", "shape", "dtype", "entries")

    def __init__(self, ir, buffer_id, shape, dtype, entries):
        self.ir, self.id, self.shape, self.dtype, self.entries = ir, int(buffer_id), tuple(shape), dtype, entries

    def __repr__(self):
        return f"<plexus.RemoteBuffer {self.id} {self.dtype.name}{list(self.shape)} x {self.entries}>"
