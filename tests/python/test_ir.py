"""The IR surface of the Python package (bindings/python/plexus): PopXL names, shapes and
dtypes inferred at the call, errors raised at the call (seed 000, seed 001 13.2)."""
import numpy as np
import pytest

import plexus
from plexus import ops


def test_ops_infer_shapes_and_dtypes():
    ir = plexus.Ir()
    with ir.main_graph:
        x = plexus.variable(np.zeros((8, 784), np.float32), name="x")
        w = plexus.variable(np.zeros((784, 32)), name="w")  # float64 downcast to float32, as PopXL
        y = ops.gelu(ops.matmul(x, w) + 1.0)
        assert (y.dtype, y.shape) == (plexus.float32, (8, 32))
        r = ops.reshape(y, (4, 64))
        assert r.shape == (4, 64)
        c = ops.cast(ops.argmax(y, axis=-1), plexus.float32)
        assert (c.dtype, c.shape) == (plexus.float32, (8,))


def test_errors_are_raised_at_the_call():
    ir = plexus.Ir()
    with ir.main_graph:
        a = plexus.variable(np.zeros((2, 3), np.float32))
        b = plexus.variable(np.zeros((4, 5), np.float32))
        with pytest.raises(plexus.ShapeMismatch, match="matmul"):
            ops.matmul(a, b)
        with pytest.raises(plexus.UnknownOp, match="matmull.*did you mean matmul"):
            ops.matmull(a, b)
        with pytest.raises(plexus.InvalidArgument, match="no attribute 'colour'"):
            ops.matmul(a, b, colour=1)
        i = plexus.variable(np.zeros((2, 3), np.int32))
        with pytest.raises(plexus.DTypeMismatch):
            ops.add(a, i)


def test_no_current_graph_is_a_clear_error():
    with pytest.raises(plexus.InvalidArgument, match="ir.main_graph"):
        plexus.variable(np.zeros(3, np.float32))


def test_in_place_add_keeps_the_name_on_the_updated_tensor():
    """PopXL's `v += 1`: add_ in place, and `v` still names the variable, whose later reads
    see the update."""
    ir = plexus.Ir()
    with ir.main_graph:
        v = plexus.variable(np.zeros(2, np.float32), name="v")
        before = v
        v += 1
        assert v is before and isinstance(v, plexus.Variable)
        out = plexus.d2h_stream(v * 2)
    with plexus.Session(ir) as session:
        np.testing.assert_array_equal(session.run()[out], [2, 2])
        np.testing.assert_array_equal(session.get_tensor_data(v), [1, 1])
