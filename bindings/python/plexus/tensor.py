"""Tensors, streams and remote buffers: handles into one Ir (ids of the C API).

Every object keeps its Ir alive, so a tensor never outlives the IR it names. Also PopXL's
tensor indexing (Tensor.__getitem__), made of the runtime's slice, gather, transpose,
reshape and where ops, and the record of which graph each tensor seen from Python
belongs to (Graph.tensors; the C API has no call listing a graph's tensors)."""
import collections.abc
import numbers
import typing
import weakref

import numpy as np

from plexus import context, dtypes
from plexus.errors import InvalidArgument
from plexus._lib import ffi, lib, check, shape_array


class TensorSpec(typing.NamedTuple):
    """The type of a tensor without the tensor (PopXL popxl.TensorSpec): `shape` (tuple of
    ints), `dtype` (plexus.DType), `meta_shape` (a replica-sharded tensor's full shape;
    () otherwise). Ir.create_graph takes it where it takes a Tensor."""

    shape: tuple
    dtype: dtypes.DType
    meta_shape: tuple = ()


class Tensor:
    """A tensor of an Ir: `id` (plx_tensor), `dtype` (plexus.DType), `shape` (tuple of ints,
    per replica), `spec`, and PopXL's `T`, `transpose`, `reshape`, `flatten`, `diag`,
    `strides`, `meta_shape`, `ipu`, `tile_set`, `in_sync_with_ipu` and `len()`. Arithmetic
    operators add ops to the current graph as PopXL's do: `+ - * /` (add/sub/mul/div),
    unary `-` (neg), `@` (matmul, also with a numpy array on the left), `+=` (add_, in
    place; the name keeps naming this tensor, as in PopXL); `t[key]` indexes as PopXL's
    Tensor.__getitem__. Not iterable and without `in`, as PopXL's. Not thread-safe
    (neither is the Ir)."""

    __slots__ = ("ir", "id", "_type", "name")

    def __init__(self, ir, tensor_id, name=None):
        self.ir, self.id, self._type, self.name = ir, int(tensor_id), None, name
        note_graph(self)

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

    def detach(self):
        """ops.detach(self): a copy through which autodiff passes no gradient (PopXL
        Tensor.detach; same shape and dtype)."""
        return _ops().detach(self)

    def flatten(self):
        """The tensor as one dim, [nelms] (PopXL Tensor.flatten)."""
        return self.reshape([self.nelms])

    def diag(self):
        """The diagonal of a rank-2 tensor [M, N]: [min(M, N)] elements x[i, i], as
        numpy.diag (PopXL Tensor.diag). Raises ValueError for another rank."""
        if self.rank != 2:
            raise ValueError(f"diag takes a rank-2 tensor, got shape {list(self.shape)}")
        rows, cols = self.shape
        return self.flatten()[:min(rows, cols) * cols:cols + 1]

    def strides(self, shape=None):
        """Bytes between consecutive elements along each dim of a row-major array of this
        tensor's dtype and `shape` (default: the tensor's shape), as numpy.ndarray.strides
        (PopXL Tensor.strides). Returns a tuple of ints, () for a scalar."""
        dims = self.shape if shape is None else tuple(int(d) for d in shape)
        step, out = self.dtype.itemsize, []
        for d in reversed(dims):
            out.append(step)
            step *= d
        return tuple(reversed(out))

    @property
    def meta_shape(self):
        """The full shape of a replica-sharded tensor (PopXL Tensor.meta_shape): () on
        Plexus, which gives no tensor a meta shape (graph_input refuses one, and the C API
        does not report a shard's full shape). A tuple."""
        return ()

    @property
    def ipu(self):
        """The device (PopXL's IPU) the tensor is on within a replica (PopXL Tensor.ipu):
        0, as the C API reports no tensor's device (a Session places blocks on devices by
        its `stages` when it compiles)."""
        return 0

    @property
    def tile_set(self):
        """"compute" (PopXL Tensor.tile_set): Plexus devices have no separate I/O tiles."""
        return "compute"

    @property
    def in_sync_with_ipu(self):
        """Whether the host's copy of a variable holds the device's value (PopXL
        Tensor.in_sync_with_ipu): always True on Plexus, which keeps no host copy that could
        fall behind (Session.get_tensor_data reads the device's value)."""
        return True

    def __len__(self):
        """The size of dim 0 (PopXL Tensor.__len__). Raises ValueError for a scalar."""
        if not self.shape:
            raise ValueError(f"{self!r} is a scalar (rank 0) and has no length")
        return self.shape[0]

    def __getitem__(self, key):
        """PopXL's Tensor.__getitem__: ops added to the current graph, numpy's meaning except
        for boolean masks.

        - an int, a slice, or a tuple of them: basic indexing (numpy's negative indices,
          None bounds and steps, also negative) by the `slice` op, then a `gather` per axis
          of step other than 1, then the axes of int indices dropped (`reshape`). Raises
          IndexError (an int out of [-dim, dim), more indices than dims; the message names
          the axis and its size), ValueError (a zero step) and InvalidArgument (an empty
          selection: a Plexus tensor has no zero-size dim).
        - an int32 Tensor or an integer host array (numpy array, list): rows of axis 0,
          [I...] + shape[1:] (`gather`). Host indices are checked (IndexError) and may be
          negative; a Tensor's are checked when the program runs.
        - a bool or uint8 Tensor or a boolean host array: a mask, broadcast with the
          tensor as numpy does; where(mask, x, 0): the masked-out elements are zeroed, not
          removed (PopXL's rule, so the shape is static).
        Anything else (a bool, str, float, None, Ellipsis, a float array or Tensor) raises
        TypeError."""
        if isinstance(key, (bool, np.bool_, str, bytes)):
            raise _bad_key(key)
        if _is_basic_key(key):
            return _basic_index(self, key)
        if isinstance(key, Tensor):
            return _tensor_index(self, key)
        if isinstance(key, (np.ndarray, collections.abc.Iterable)):
            return _host_index(self, key)
        raise _bad_key(key)

    # PopXL's guards: `for v in t`, `v in t` and numpy's own operators would otherwise fall
    # back to __getitem__ / __array_ufunc__; numpy then defers to the reflected operators.
    __iter__ = None
    __contains__ = None
    __array_ufunc__ = None

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

    def __rmatmul__(self, other):
        """other @ self for a number or numpy array `other` (PopXL Tensor.__rmatmul__):
        ops.matmul with `other` made a constant of this tensor's dtype."""
        return _ops().matmul(other, self)

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


# Which graph each tensor seen from Python belongs to: {Ir: {tensor id: (graph id, class,
# name)}}, in the order the tensors were first seen. Weak on the Ir: the record goes with it.
_GRAPH_OF = weakref.WeakKeyDictionary()


def note_graph(tensor, graph_id=None):
    """Records the graph of `tensor` when it is first seen: `graph_id` if given, else the
    current graph when it is of the tensor's Ir (where plexus adds ops and constants), else
    the Ir's main graph. A given `graph_id` (a graph's own inputs and outputs) also
    corrects an earlier record; the class and name first seen are kept."""
    table = _GRAPH_OF.setdefault(tensor.ir, {})
    known = table.get(tensor.id)
    if known is None:
        if graph_id is None:
            in_ir = context.has_graph() and context.current_ir() is tensor.ir
            graph_id = context.current_graph().id if in_ir else tensor.ir._main_graph_id
        table[tensor.id] = (graph_id, type(tensor), tensor.name)
    elif graph_id is not None:
        table[tensor.id] = (graph_id,) + known[1:]


def tensors_of_graph(ir, graph_id):
    """[(tensor id, class, name)] of the tensors of graph `graph_id` of `ir` that Python has
    seen (note_graph), in the order they were first seen."""
    return [(tid, cls, name) for tid, (gid, cls, name) in _GRAPH_OF.get(ir, {}).items() if gid == graph_id]


# PopXL's Tensor.__getitem__ (the operations themselves; Tensor.__getitem__ documents them).
def _bad_key(key):
    return TypeError("a Tensor is indexed by an int, a slice, a tuple of ints and slices, an int32 Tensor or "
                     "integer host array (gather), or a bool or uint8 Tensor or boolean host array (mask); "
                     f"got {type(key).__name__} {key!r:.80}")


def _is_int_key(k):
    return isinstance(k, numbers.Integral) and not isinstance(k, (bool, np.bool_))


def _is_basic_key(key):
    if _is_int_key(key) or isinstance(key, slice):
        return True
    return isinstance(key, tuple) and all(_is_int_key(k) or isinstance(k, slice) for k in key)


def _axis_ranges(key, shape):
    """[(range of indices, is an int index)] for each axis `key` (basic) indexes, numpy's
    meaning: ints and slice bounds counted from the end when negative, slices clamped."""
    keys = key if isinstance(key, tuple) else (key,)
    if len(keys) > len(shape):
        raise IndexError(f"{len(keys)} indices for a tensor of rank {len(shape)} (shape {list(shape)})")
    ranges = []
    for axis, (k, dim) in enumerate(zip(keys, shape)):
        if isinstance(k, slice):
            r = range(*k.indices(dim))  # ValueError for a zero step, as numpy
            if not r:
                raise InvalidArgument(f"slice {k.start}:{k.stop}:{k.step} selects nothing of axis {axis} (size "
                                      f"{dim}); a Plexus tensor cannot be empty")
            ranges.append((r, False))
        else:
            if not -dim <= k < dim:
                raise IndexError(f"index {k} is out of range for axis {axis} of size {dim}")
            ranges.append((range(k % dim, k % dim + 1), True))
    return ranges


def _basic_index(x, key):
    """x[key] for an int, a slice or a tuple of them: one slice op over the bounding range
    of each indexed axis, a gather per axis whose step is not 1, a reshape dropping the axes
    of int indices."""
    ranges = _axis_ranges(key, x.shape)
    if not ranges:
        return x  # x[()]
    lows = [min(r[0], r[-1]) for r, _ in ranges]
    highs = [max(r[0], r[-1]) + 1 for r, _ in ranges]
    y = _ops().slice(x, starts=lows, ends=highs, axes=list(range(len(ranges))))
    for axis, ((r, _), low) in enumerate(zip(ranges, lows)):
        if len(r) > 1 and r.step != 1:
            y = _take(y, axis, np.arange(len(r)) * r.step + (r[0] - low))
    kept = [d for axis, d in enumerate(y.shape) if axis >= len(ranges) or not ranges[axis][1]]
    return y if len(kept) == y.rank else y.reshape(kept)


def _take(x, axis, indices):
    """The entries `indices` (host ints in range) of x along `axis`: gather, which reads
    axis 0, between transposes bringing `axis` first and back."""
    index = _host_constant(x.ir, np.asarray(indices, np.int32))
    if axis == 0:
        return _ops().gather(x, index)
    perm = [axis] + [a for a in range(x.rank) if a != axis]
    return _ops().gather(x.transpose(perm), index).transpose(np.argsort(perm).tolist())


def _host_constant(ir, array):
    """A constant of numpy `array` (its dtype) in the current graph when it is of `ir`,
    else in ir's main graph (where ops on ir's tensors go without a `with graph:`)."""
    from plexus.variables import constant
    if context.has_graph() and context.current_ir() is ir:
        return constant(array)
    with ir.main_graph:
        return constant(array)


def _masked(x, mask):
    """where(mask, x, 0): PopXL's boolean indexing, which zeroes instead of removing."""
    return _ops().where(mask, x, _host_constant(x.ir, np.zeros((), x.dtype.numpy)))


def _tensor_index(x, key):
    if key.dtype == dtypes.int32:
        return _ops().gather(x, key)
    if key.dtype in (dtypes.uint8, dtypes.bool_):
        return _masked(x, key)
    raise _bad_key(key)


def _host_index(x, key):
    """x[key] for a host array or sequence: a boolean mask, or integer rows of axis 0
    (checked here, negatives counted from the end)."""
    try:
        array = np.asarray(key)
    except ValueError:  # ragged
        raise _bad_key(key) from None
    if array.dtype == np.bool_:
        return _masked(x, _host_constant(x.ir, array.astype(np.uint8)))
    if not np.issubdtype(array.dtype, np.integer) or array.size == 0:
        raise _bad_key(key)
    if x.rank == 0:
        raise IndexError(f"{x!r} is a scalar (rank 0): it has no rows to index")
    rows = x.shape[0]
    bad = array[(array < -rows) | (array >= rows)]
    if bad.size:
        raise IndexError(f"index {bad.flat[0]} is out of range for axis 0 of size {rows}")
    return _ops().gather(x, _host_constant(x.ir, (array % rows).astype(np.int32)))


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

    def __init__(self, tensor_shape, tensor_dtype, entries=1):
        """Adds the buffer to the current Ir (PopXL's constructor, its positional order):
        `entries` (>= 1) slots of `tensor_shape` (per replica, without a group dim) and
        `tensor_dtype`. Raises InvalidArgument (no Ir open, a bad shape or entries) and
        DTypeMismatch (a dtype the devices do not hold)."""
        ir = context.current_ir()
        dtype = dtypes.of(tensor_dtype)
        dims, rank = shape_array(tensor_shape)
        out = ffi.new("plx_remote_buffer*")
        check(lib.plx_ir_add_remote_buffer(ir._ptr, dtype.code, dims, rank, int(entries), out))
        self.ir, self.id, self.shape, self.dtype, self.entries = ir, int(out[0]), tuple(tensor_shape), dtype, int(entries)

    def __repr__(self):
        return f"<plexus.RemoteBuffer {self.id} {self.dtype.name}{list(self.shape)} x {self.entries}>"
