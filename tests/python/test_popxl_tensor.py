"""popxl.Tensor's indexing and sequence protocol and popxl.Graph's tensor lists
(bindings/python/plexus/tensor.py, graph.py): every indexing form against numpy on the
same array, run on a session; the shapes known at build time; the errors PopXL raises
(TypeError, IndexError, ValueError); len(), strides, diag, `array @ tensor`; and
Graph.tensors / variables / constants of a main graph and of subgraphs."""
import numpy as np
import pytest

import plexus
import popxl
import popxl.ops as ops
from popxl import transforms

X = np.arange(24, dtype=np.float32).reshape(4, 6) - 7.5
MASK = (X % 3) > 1
ROW_MASK = np.array([[True], [False], [True], [True]])

# (label, key, numpy's result on X): numpy removes the masked-out elements, PopXL zeroes them.
CASES = [
    ("int", 1, X[1]),
    ("negative int", -1, X[-1]),
    ("slice", slice(1, 3), X[1:3]),
    ("reversed axis 1", (slice(None), slice(None, None, -1)), X[:, ::-1]),
    ("step 2", slice(None, None, 2), X[::2]),
    ("int and slice", (1, slice(2, None)), X[1, 2:]),
    ("two ints", (-2, 3), X[-2, 3]),
    ("negative step 2 and step 2", (slice(3, 0, -2), slice(1, 6, 2)), X[3:0:-2, 1:6:2]),
    ("bounds clamped", (slice(-10, 10), slice(-2, None)), X[-10:10, -2:]),
    ("step larger than the dim", slice(1, None, 9), X[1::9]),
    ("numpy int", np.int64(2), X[2]),
    ("host int array", np.array([2, 0]), X[np.array([2, 0])]),
    ("negative host ints", np.array([-1, 0, -1]), X[np.array([-1, 0, -1])]),
    ("nested list", [[0, 1], [1, 1]], X[[[0, 1], [1, 1]]]),
    ("bool mask", MASK, np.where(MASK, X, 0)),
    ("broadcast bool mask", ROW_MASK, np.where(ROW_MASK, X, 0)),
    ("bool list", ROW_MASK.tolist(), np.where(ROW_MASK, X, 0)),
]


@pytest.fixture(scope="module")
def indexed():
    """{label: (shape at build time, value from a run)} for every case, plus "int32 tensor"
    (a variable of indices) and "bool tensor" (a variable made from a bool mask)."""
    ir = popxl.Ir()
    results, streams = {}, {}
    with ir.main_graph:
        x = popxl.variable(X, name="x")
        indexed = {label: x[key] for label, key, _ in CASES}
        indexed["int32 tensor"] = x[popxl.variable(np.array([3, 1, 3], np.int32))]
        indexed["bool tensor"] = x[popxl.variable(MASK)]
        indexed["uint8 tensor"] = x[popxl.variable(MASK.astype(np.uint8))]
        for label, y in indexed.items():
            streams[label] = popxl.d2h_stream(y.shape, y.dtype)
            ops.host_store(streams[label], y)
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run()
    for label, y in indexed.items():
        results[label] = (y.shape, out[streams[label]])
    return results


@pytest.mark.parametrize("label, expected", [(c[0], c[2]) for c in CASES]
                         + [("int32 tensor", X[[3, 1, 3]]), ("bool tensor", np.where(MASK, X, 0)),
                            ("uint8 tensor", np.where(MASK, X, 0))])
def test_indexing_matches_numpy(indexed, label, expected):
    shape, value = indexed[label]
    assert shape == np.shape(expected)
    np.testing.assert_array_equal(np.reshape(value, shape), expected)


def test_indexing_an_int32_tensor_and_autodiff_through_it():
    x0 = np.arange(20, dtype=np.int32).reshape(5, 4)
    w0 = np.linspace(-1, 1, 20, dtype=np.float32).reshape(5, 4)
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(x0)
        w = popxl.variable(w0)
        y = x[::-2, 1]
        loss = ops.reduce_sum(w[1:, ::-3] * 2.0)
        (dw,) = plexus.autodiff(loss, [w])
        y_d2h, dw_d2h = popxl.d2h_stream(y.shape, y.dtype), popxl.d2h_stream(dw.shape, dw.dtype)
        ops.host_store(y_d2h, y)
        ops.host_store(dw_d2h, dw)
    with popxl.Session(ir) as session:
        out = session.run()
    np.testing.assert_array_equal(out[y_d2h], x0[::-2, 1])
    expected = np.zeros_like(w0)
    expected[1:, ::-3] = 2
    np.testing.assert_array_equal(out[dw_d2h], expected)


@pytest.mark.parametrize("copy, factor", [(lambda t: t.detach(), 1), (ops.identity, 2)])
def test_detach_stops_the_gradient_of_its_path(copy, factor):
    """d sum(w * w.detach()) / dw = w (2 w with ops.identity in its place), as PopXL's ops.detach."""
    w0 = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    ir = popxl.Ir()
    with ir.main_graph:
        w = popxl.variable(w0)
        (dw,) = plexus.autodiff(ops.reduce_sum(w * copy(w)), [w])
        dw_d2h = popxl.d2h_stream(dw.shape, dw.dtype)
        ops.host_store(dw_d2h, dw)
    with popxl.Session(ir) as session:
        out = session.run()
    np.testing.assert_array_equal(out[dw_d2h], factor * w0)


@pytest.mark.parametrize("key, error, message", [
    (4, IndexError, "index 4 is out of range for axis 0 of size 4"),
    (-5, IndexError, "index -5 is out of range for axis 0 of size 4"),
    ((0, 6), IndexError, "index 6 is out of range for axis 1 of size 6"),
    ((0, 0, 0), IndexError, "3 indices for a tensor of rank 2"),
    (np.array([1, 4]), IndexError, "index 4 is out of range for axis 0 of size 4"),
    ([0, -5], IndexError, "index -5 is out of range for axis 0 of size 4"),
    (slice(None, None, 0), ValueError, "zero"),
    (slice(3, 1), plexus.InvalidArgument, "selects nothing of axis 0"),
    ((slice(None), slice(6, None)), plexus.InvalidArgument, "selects nothing of axis 1"),
    ("a", TypeError, "got str 'a'"),
    (True, TypeError, "got bool True"),
    (1.1, TypeError, "got float 1.1"),
    (None, TypeError, "got NoneType None"),
    (Ellipsis, TypeError, "got ellipsis"),
    ((slice(None), None), TypeError, "got tuple"),
    (np.array([0.5, 1.0]), TypeError, "got ndarray"),
    ([], TypeError, "got list"),
    ([[0, 1], [2]], TypeError, "got list"),
])
def test_bad_indices_raise_as_popxl_and_numpy_and_add_nothing(key, error, message):
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(X)
        before = ir.main_graph.tensors
        with pytest.raises(error, match=message):
            x[key]
        assert ir.main_graph.tensors == before


def test_a_float_tensor_is_no_index_and_a_scalar_has_no_rows():
    with popxl.Ir().main_graph:
        x = popxl.variable(X)
        with pytest.raises(TypeError, match="indexed by"):
            x[popxl.variable(np.array([0.0, 1.0], np.float32))]
        scalar = popxl.variable(1.5)
        with pytest.raises(IndexError, match="rank 0"):
            scalar[0]
        with pytest.raises(IndexError, match="scalar"):
            scalar[[0]]


def test_len_iteration_and_membership_follow_popxl():
    with popxl.Ir().main_graph:
        x = popxl.variable(X)
        assert len(x) == 4 and len(x[0]) == 6
        scalar = popxl.variable(1)
        with pytest.raises(ValueError, match="scalar"):
            len(scalar)
        with pytest.raises(ValueError, match="add"):
            collected = []
            collected += scalar  # Tensor.__radd__ of an empty list: ValueError, as PopXL's test has it
        with pytest.raises(TypeError, match="not iterable"):
            iter(x)
        with pytest.raises(TypeError):
            1.5 in x  # noqa: B015


def test_numpy_operands_on_the_left_use_the_tensors_reflected_operators():
    a = np.array([[1, 2], [3, 4], [5, 6]], np.float32)
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(X[:2, :3])
        product = a @ x
        total = a[:2] + x[:, :2]
        assert isinstance(product, popxl.Tensor) and product.shape == (3, 3)
        assert isinstance(total, popxl.Tensor) and total.shape == (2, 2)
        streams = [popxl.d2h_stream(t.shape, t.dtype) for t in (product, total)]
        ops.host_store(streams[0], product)
        ops.host_store(streams[1], total)
    with popxl.Session(ir) as session:
        out = session.run()
    np.testing.assert_allclose(out[streams[0]], a @ X[:2, :3], rtol=1e-6)
    np.testing.assert_array_equal(out[streams[1]], a[:2] + X[:2, :2])


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4)])
def test_diag_is_numpys(shape):
    x0 = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    ir = popxl.Ir()
    with ir.main_graph:
        d = popxl.variable(x0).diag()
        d_d2h = popxl.d2h_stream(d.shape, d.dtype)
        ops.host_store(d_d2h, d)
        with pytest.raises(ValueError, match="rank-2"):
            popxl.variable(x0[0]).diag()
    with popxl.Session(ir) as session:
        np.testing.assert_array_equal(session.run()[d_d2h], np.diag(x0))


def test_strides_meta_shape_and_placement():
    with popxl.Ir().main_graph:
        x = popxl.variable(X)
        b = popxl.variable(np.zeros((2, 3, 5), np.uint8))
        assert x.strides() == X.strides
        assert x.strides((2, 3, 4)) == np.empty((2, 3, 4), np.float32).strides
        assert b.strides() == (15, 5, 1)
        assert popxl.variable(1.0).strides() == ()
        y = x + 1
        assert (x.meta_shape, y.meta_shape, y.spec.meta_shape) == ((), (), ())
        assert (x.ipu, y.ipu, x.tile_set, y.tile_set) == (0, 0, "compute", "compute")
        assert x.in_sync_with_ipu


def test_main_graph_lists_its_tensors_variables_and_constants_by_type():
    ir = popxl.Ir()
    main = ir.main_graph
    with main:
        v = popxl.variable(np.ones(3, np.float32), name="v")
        c = popxl.constant(np.full(3, 2, np.float32), name="c")
        s = popxl.h2d_stream((3,), popxl.float32, name="s")
        loaded = ops.host_load(s)
        product = v * c
        y = product + loaded
    assert main.tensors == (v, c, loaded, product, y)
    assert [type(t) for t in main.tensors] == [popxl.tensor.Variable, popxl.tensor.Constant, popxl.Tensor,
                                               popxl.Tensor, popxl.Tensor]
    assert main.tensors[0].name == "v" and main.tensors[-1] == y
    assert main.variables == (v,) and isinstance(main.variables[0], popxl.tensor.Variable)
    assert main.constants == (c,) and isinstance(main.constants[0], popxl.tensor.Constant)


def test_each_subgraph_lists_its_own_tensors():
    def scale_rows(t):
        return t[np.array([1, 0])] * 3.0

    ir = popxl.Ir()
    main = ir.main_graph
    with main:
        x = popxl.variable(X[:2], name="x")
        graph = ir.create_graph(scale_rows, x.spec)
        main_before = main.tensors
        (y,) = ops.call(graph, x)
        grad = transforms.autodiff(graph)
        y_d2h = popxl.d2h_stream(y.shape, y.dtype)
        ops.host_store(y_d2h, y)
    assert main.tensors == main_before + (y,)
    assert main.variables == (x,) and main.constants == ()
    inner = graph.tensors
    assert inner[0] == graph.inputs[0] and inner[0].name == "t" and graph.outputs[0] in inner
    assert graph.variables == ()
    assert [c.shape for c in graph.constants] == [(2,), ()]  # the row indices, then 3.0
    assert all(isinstance(c, popxl.tensor.Constant) for c in graph.constants)
    assert set(grad.graph.inputs + grad.graph.outputs) <= set(grad.graph.tensors)
    graphs = (main.tensors, inner, grad.graph.tensors)
    assert sum(len(g) for g in graphs) == len(set().union(*graphs)), "a tensor is listed in two graphs"
    with popxl.Session(ir) as session:
        np.testing.assert_array_equal(session.run()[y_d2h], X[[1, 0]] * 3)


def test_indexing_outside_a_graph_context_goes_to_the_tensors_main_graph():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(X)
    y = x[::-1, 2]
    assert y in ir.main_graph.tensors and len(ir.main_graph.constants) == 1  # the gather's indices
    with ir.main_graph:
        y_d2h = popxl.d2h_stream(y.shape, y.dtype)
        ops.host_store(y_d2h, y)
    with popxl.Session(ir) as session:
        np.testing.assert_array_equal(session.run()[y_d2h], X[::-1, 2])
