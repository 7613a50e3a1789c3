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
