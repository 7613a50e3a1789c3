"""plexus.ops: every op the runtime registers (docs/ops.md), as PopXL's popxl.ops.

`ops.<name>(*inputs, **attributes)` adds op <name> to the graph of its inputs (or the
current graph): ops.matmul(x, w), ops.gelu(x), ops.reshape(x, (8, 784)),
ops.scaled_add_(w, g, b=-lr), ops.collectives.replicated_all_gather(shard), ... The
functions are made from the runtime's catalog (plx_runtime_get_ops) when the package is
imported, so a new op in the runtime needs no Python change; a few take PopXL's argument
forms (host_load, remote_load, remote_store, cast). An unknown name raises
plexus.UnknownOp."""
import difflib
import numbers

import numpy as np

from plexus import context, dtypes, transfers
from plexus.errors import InvalidArgument, UnknownOp
from plexus._lib import ffi, lib, check
from plexus.ir import ReplicaGrouping
from plexus.ops import catalog
from plexus.tensor import Tensor, RemoteBuffer, HostToDeviceStream

_MAX_OUTPUTS = 16


def _is_value(a):
    return isinstance(a, (numbers.Number, np.ndarray, np.generic)) and not isinstance(a, bool)


def _split_args(schema, args):
    """(inputs, remaining positional args): leading Tensors, and numbers or arrays while the
    op still needs inputs."""
    inputs, i = [], 0
    while i < len(args) and len(inputs) < schema.max_inputs:
        a = args[i]
        if not (isinstance(a, Tensor) or (len(inputs) < schema.min_inputs and _is_value(a))):
            break
        inputs.append(a)
        i += 1
    return inputs, list(args[i:])


def _as_tensors(schema, inputs):
    """Numbers and arrays among `inputs` become constants of the first Tensor's dtype."""
    like = next((t for t in inputs if isinstance(t, Tensor)), None)
    if like is None and any(not isinstance(t, Tensor) for t in inputs):
        raise InvalidArgument(f"op '{schema.name}': at least one input must be a Tensor")
    return [t if isinstance(t, Tensor) else constant_like(like, t) for t in inputs]


def constant_like(like, value):
    """`value` (a number or array) as a constant of Tensor `like`'s dtype, in the current
    graph when it is of like's Ir (a subgraph's constant stays in the subgraph), else in
    like's main graph."""
    from plexus.variables import constant
    array = np.asarray(value, dtype=like.dtype.numpy)
    if context.has_graph() and context.current_ir() is like.ir:
        return constant(array)
    with like.ir.main_graph:
        return constant(array)


def _attr_value(schema, name, value):
    """(kind, value) of one attribute, converted by the op's declared kind."""
    spec = schema.attr(name)
    if spec is None:
        valid = ", ".join(a["name"] for a in schema.attrs) or "none"
        raise InvalidArgument(f"op '{schema.name}' has no attribute '{name}' (its attributes: {valid})")
    kind = spec["kind"]
    try:
        if isinstance(value, dtypes.DType):
            value = value.code
        elif isinstance(value, RemoteBuffer):
            value = value.id
        if kind == "int":
            if isinstance(value, float) and not value.is_integer():
                raise ValueError("not an integer")
            return lib.PLX_ATTR_INT, int(value)
        if kind == "float":
            return lib.PLX_ATTR_FLOAT, float(value)
        if kind == "ints":
            return lib.PLX_ATTR_INTS, [int(v) for v in (value if np.ndim(value) else [value])]
        if not isinstance(value, str):
            raise ValueError("not a string")
        return lib.PLX_ATTR_STRING, value
    except (TypeError, ValueError) as e:
        raise InvalidArgument(f"op '{schema.name}': attribute '{name}' takes {kind}, got {value!r} ({e})") from None


def _attributes(schema, positional, kwargs):
    """{name: value} from the positional leftovers (in the op's attribute order) and the
    keyword arguments; `group=` / `replica_grouping=` become group_size and stride."""
    attrs = dict(kwargs)
    for key in ("group", "replica_grouping"):
        grouping = attrs.pop(key, None)
        if isinstance(grouping, ReplicaGrouping):
            attrs.update(group_size=grouping.group_size, stride=grouping.stride)
        elif grouping is not None:
            raise InvalidArgument(f"op '{schema.name}': {key} must be a ReplicaGrouping, got {grouping!r}")
    free = [a["name"] for a in schema.attrs if a["name"] not in attrs]
    if len(positional) > len(free):
        raise InvalidArgument(f"op '{schema.name}' takes at most {schema.max_inputs} inputs and the attributes "
                              f"{[a['name'] for a in schema.attrs]}; got {len(positional)} more arguments")
    attrs.update(zip(free, positional))
    return attrs


def _c_attrs(schema, attrs):
    """A plx_attr array for `attrs` and the cffi objects it borrows."""
    array = ffi.new("plx_attr[]", max(len(attrs), 1))
    keep = []
    for slot, (name, value) in zip(array, attrs.items()):
        kind, v = _attr_value(schema, name, value)
        keep.append(ffi.new("char[]", name.encode()))
        slot.name, slot.kind = keep[-1], kind
        if kind == lib.PLX_ATTR_INT:
            slot.i = v
        elif kind == lib.PLX_ATTR_FLOAT:
            slot.f = v
        elif kind == lib.PLX_ATTR_INTS:
            keep.append(ffi.new("int64_t[]", v or [0]))
            slot.ints, slot.num_ints = keep[-1], len(v)
        else:
            keep.append(ffi.new("char[]", v.encode()))
            slot.s = keep[-1]
    return array, keep


def add_op(name, inputs, attrs, ir=None):
    """Adds op `name` with Tensors `inputs` and attributes `attrs` ({name: value}) to `ir`
    (default: the inputs' IR, else the current one). Returns a Tensor, a tuple of Tensors,
    or None. Raises UnknownOp, InvalidArgument, ShapeMismatch, DTypeMismatch, ..."""
    schema = catalog.schemas().get(name)
    if schema is None:
        raise _unknown(name)
    ir = ir or (inputs[0].ir if inputs else context.current_ir())
    for t in inputs:
        if t.ir is not ir:
            raise InvalidArgument(f"op '{name}': input {t!r} belongs to another IR")
    ids = ffi.new("plx_tensor[]", [t.id for t in inputs] or [0])
    c_attrs, _keep = _c_attrs(schema, attrs)
    capacity = _MAX_OUTPUTS
    outputs = ffi.new("plx_tensor[]", capacity)
    count = ffi.new("size_t*")
    status = lib.plx_ir_add_op(ir._ptr, name.encode(), ids, len(inputs), c_attrs, len(attrs), outputs, capacity, count)
    if status == lib.PLX_ERR_INVALID_ARGUMENT and count[0] > capacity:  # more outputs (clip_scale_ of many tensors)
        capacity = count[0]
        outputs = ffi.new("plx_tensor[]", capacity)
        status = lib.plx_ir_add_op(ir._ptr, name.encode(), ids, len(inputs), c_attrs, len(attrs), outputs, capacity,
                                   count)
    check(status)
    result = tuple(Tensor(ir, outputs[i]) for i in range(count[0]))
    return None if not result else result[0] if len(result) == 1 else result


def _checked_inputs(schema, args):
    """(input Tensors, remaining positional args) of a call of op `schema` with `args`;
    numbers and arrays among the inputs become constants. Raises InvalidArgument naming
    the first missing input."""
    inputs, rest = _split_args(schema, args)
    if len(inputs) < schema.min_inputs:
        got = repr(rest[0]) if rest else "nothing"
        raise InvalidArgument(f"op '{schema.name}': input {len(inputs)} must be a Tensor (or a number or array), "
                              f"got {got}")
    return _as_tensors(schema, inputs), rest


def _make(schema):
    def op(*args, **kwargs):
        """Replaced by the op's docstring (catalog.docstring) below."""
        inputs, rest = _checked_inputs(schema, args)
        return add_op(schema.name, inputs, _attributes(schema, rest, kwargs))

    op.__name__ = op.__qualname__ = schema.name
    op.__doc__ = catalog.docstring(schema)
    return op


def _unknown(name):
    close = difflib.get_close_matches(name, catalog.schemas().keys(), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return UnknownOp(f"no op named '{name}' is registered{hint} (docs/ops.md lists them)")


def host_load(stream, name=None):
    """The tensor a host-to-device stream fills each step (PopXL ops.host_load): the stream's
    [shape] of its dtype. In the main graph it is the stream's tensor (`name` ignored), one
    transfer per run of the main graph however many host_loads read it; inside a subgraph it
    is a new value named `name` (default the stream's name), one transfer each time the
    graph runs (plexus.transfers: a repeat of c iterations moves c). Raises InvalidArgument
    for another argument than a HostToDeviceStream."""
    if not isinstance(stream, HostToDeviceStream):
        raise InvalidArgument(f"host_load takes a HostToDeviceStream, got {stream!r}")
    graph = context.current_graph()
    if not graph.is_main:
        return transfers.load(graph, stream, name)
    if all(piece is not stream for piece, _ in transfers.pieces(stream.ir, stream)):
        transfers.add_piece(stream.ir, stream, stream, ())
    return stream.tensor


def remote_load(remote_buffer, offset=0):
    """A copy of this replica's slot `offset` of `remote_buffer` (PopXL ops.remote_load;
    seed 000 17.2 line 110): the slot's shape and dtype (a shard for a buffer of
    replica-sharded variables). offset: an int, or an int32 scalar Tensor read at run time."""
    if isinstance(offset, Tensor):
        return add_op("remote_load", [offset], {"buffer": remote_buffer}, remote_buffer.ir)
    return add_op("remote_load", [], {"buffer": remote_buffer, "index": offset}, remote_buffer.ir)


def remote_store(remote_buffer, offset, t):
    """Copies tensor `t` into this replica's slot `offset` of `remote_buffer` (PopXL
    ops.remote_store; seed 000 17.2 line 221). offset: an int or an int32 scalar Tensor."""
    if isinstance(offset, Tensor):
        return add_op("remote_store", [t, offset], {"buffer": remote_buffer})
    return add_op("remote_store", [t], {"buffer": remote_buffer, "index": offset})


def cast(t, dtype):
    """`t` converted to `dtype` (a device DType such as plexus.float16, a numpy dtype or a
    name); float to int truncates toward zero and saturates, to float16 rounds to nearest
    even, to bool is nonzero (docs/ops.md)."""
    return add_op("cast", [t], {"dtype": dtypes.of(dtype)})


def matmul(a, b, **attributes):
    """a @ b with numpy's rank rules (PopXL ops.matmul, numpy.matmul): two matrices give
    the "matmul" op; a rank-1 operand is a row (a) or a column (b) whose dim is dropped
    from the result; ranks above 2 give "batch_matmul" (leading dims broadcast).
    `attributes` (transpose_a, transpose_b) go to the op. Raises ShapeMismatch (the
    contracted dims differ), DTypeMismatch, InvalidArgument (a rank-0 operand)."""
    (a, b), _ = _checked_inputs(catalog.schemas()["matmul"], [a, b])
    if a.rank == 0 or b.rank == 0:
        raise InvalidArgument(f"matmul: operands must have rank >= 1, got {list(a.shape)} and {list(b.shape)}")
    row, column = a.rank == 1, b.rank == 1
    a2 = reshape(a, [1, a.shape[0]]) if row else a
    b2 = reshape(b, [b.shape[0], 1]) if column else b
    op = "batch_matmul" if max(a2.rank, b2.rank) > 2 else "matmul"
    y = add_op(op, [a2, b2], attributes)
    if not (row or column):
        return y
    shape = list(y.shape)
    del shape[-1 if column else -2]
    if row and column:
        shape = []
    return reshape(y, shape)


_SPECIAL = {"host_load": host_load, "remote_load": remote_load, "remote_store": remote_store, "cast": cast,
            "matmul": matmul}


def _install():
    namespace = globals()
    for name, schema in catalog.schemas().items():
        namespace[name] = _SPECIAL.get(name) or _make(schema)
    namespace["host_load"] = host_load


_install()

from plexus.ops import collectives  # noqa: E402  (needs the ops above)
from plexus.ops.call import call, call_with_info, repeat, repeat_with_info, CallSiteInfo  # noqa: E402,F401  (replaces the "call" and "repeat" ops)


def __getattr__(name):
    raise _unknown(name)


def __dir__():
    return sorted(set(catalog.schemas()) | {"host_load", "collectives", "add_op", "call", "call_with_info",
                                            "repeat_with_info", "CallSiteInfo"})
