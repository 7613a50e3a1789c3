"""Host transfers inside subgraphs (bindings/python/plexus/transfers.py and
popxl/host_transfers.py; PopXL user guide "Session", "Number of host transfers"): each
host_load / host_store in a subgraph moves one transfer each time the graph runs, a repeat
of c iterations c of them, in program order; the host arrays of a run are split over and
joined from the runtime streams the call sites made. Checked against numpy loops over the
same transfers, with replication, nesting, a main-graph load beside a repeated one, and the
errors."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops


def _affine_ir(count, num_host_transfers, replication=1):
    """y_i = x_i @ W + b for each of `count` transfers of x, loaded and stored inside a
    repeated graph (PopXL's repeat_graph_2.py pattern: the carried input is overwritten)."""
    ir = popxl.Ir(replication)
    ir.num_host_transfers = num_host_transfers
    with ir.main_graph:
        x_h2d = popxl.h2d_stream([2, 3], popxl.float32, name="x")
        y_d2h = popxl.d2h_stream([2, 4], popxl.float32, name="y")
        w = popxl.variable(np.arange(12, dtype=np.float32).reshape(3, 4) / 10, name="W")
        b = popxl.variable(np.array([1, -1, 2, -2], np.float32), name="b")

        def body(carried, w_in, b_in):
            x = ops.host_load(x_h2d, "x")
            y = x @ w_in + b_in
            ops.host_store(y_d2h, y)
            return carried + 1

        graph = ir.create_graph(body, popxl.constant(np.zeros(1, np.float32)).spec, w.spec, b.spec)
        (n,) = ops.repeat(graph, count, popxl.constant(np.zeros(1, np.float32)), w, b)
        n_d2h = popxl.d2h_stream([1], popxl.float32, name="n")
        ops.host_store(n_d2h, n)
    return ir, x_h2d, y_d2h, n_d2h, graph


W = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
B = np.array([1, -1, 2, -2], np.float32)


def test_each_iteration_of_a_repeat_moves_one_transfer():
    ir, x_h2d, y_d2h, n_d2h, graph = _affine_ir(count=8, num_host_transfers=8)
    assert [t.name for t in graph.inputs] == ["carried", "w_in", "b_in"]  # the load is hidden
    assert len(graph.outputs) == 1  # so is the store
    x = np.random.default_rng(1).standard_normal((8, 2, 3)).astype(np.float32)
    with popxl.Session(ir) as session:
        out = session.run({x_h2d: x})
    assert out[y_d2h].shape == (8, 2, 4)
    np.testing.assert_allclose(out[y_d2h], x @ W + B, rtol=1e-6)
    # the main graph ran once; n, stored once per run, fills the first row of its block
    np.testing.assert_array_equal(out[n_d2h], [[8.0]] + [[0.0]] * 7)


def test_the_main_graph_runs_again_for_each_whole_multiple_of_the_transfers():
    ir, x_h2d, y_d2h, n_d2h, _ = _affine_ir(count=3, num_host_transfers=6)
    x = np.random.default_rng(2).standard_normal((6, 2, 3)).astype(np.float32)
    with popxl.Session(ir) as session:
        out = session.run({x_h2d: x})
    np.testing.assert_allclose(out[y_d2h], x @ W + B, rtol=1e-6)
    np.testing.assert_array_equal(out[n_d2h], [[3.0], [0], [0], [3.0], [0], [0]])  # two runs, blocks of 3


def test_replicas_take_their_own_transfers():
    ir, x_h2d, y_d2h, _, _ = _affine_ir(count=4, num_host_transfers=4, replication=2)
    x = np.random.default_rng(3).standard_normal((4, 2, 2, 3)).astype(np.float32)  # [N, R] + shape
    with popxl.Session(ir) as session:
        y = session.run({x_h2d: x})[y_d2h]
    assert y.shape == (4, 2, 2, 4)
    np.testing.assert_allclose(y, x @ W + B, rtol=1e-6)


def test_nested_calls_and_repeats_keep_program_order():
    """Main: a host_load of s (transfer 0), then a repeat of 2 of a graph that calls a graph
    repeating 3 loads (transfers 1-6); each transfer is stored doubled in that order."""
    ir = popxl.Ir()
    ir.num_host_transfers = 7
    with ir.main_graph:
        s_h2d = popxl.h2d_stream([2], popxl.float32, name="s")
        out_d2h = popxl.d2h_stream([2], popxl.float32, name="out")
        first = ops.host_load(s_h2d, "s")
        ops.host_store(out_d2h, first * 2)

        def inner():
            ops.host_store(out_d2h, ops.host_load(s_h2d, "s") * 2)

        inner_graph = ir.create_graph(inner)

        def middle():
            ops.repeat(inner_graph, 3)

        middle_graph = ir.create_graph(middle)
        assert middle_graph.inputs == () and middle_graph.outputs == ()
        ops.repeat(middle_graph, 2)
    s = np.arange(14, dtype=np.float32).reshape(7, 2)
    with popxl.Session(ir) as session:
        out = session.run({s_h2d: s})[out_d2h]
    np.testing.assert_array_equal(out, s * 2)


@pytest.mark.parametrize("reuse_code", [False, True])
def test_calls_inlined_or_reusing_code_move_a_transfer_each(reuse_code):
    """A graph loading x, storing x + w and returning it, called twice (the second call on
    the first's result): transfer t of y is x_t + w_t, inlined or through call ops."""
    ir = popxl.Ir()
    ir.num_host_transfers = 2
    with ir.main_graph:
        x_h2d = popxl.h2d_stream([2, 3], popxl.float32, name="x")
        y_d2h = popxl.d2h_stream([2, 3], popxl.float32, name="y")
        w = popxl.variable(np.ones((2, 3), np.float32), name="w")

        def body(w_in):
            y = ops.host_load(x_h2d, "x") + w_in
            ops.host_store(y_d2h, y)
            return y

        graph = ir.create_graph(body, w)
        (once,) = ops.call(graph, w, reuse_code=reuse_code)
        ops.call(graph, once, reuse_code=reuse_code)
    x = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    with popxl.Session(ir) as session:
        y = session.run({x_h2d: x})[y_d2h]
    np.testing.assert_array_equal(y, [x[0] + 1, x[1] + x[0] + 1])


def test_streams_that_do_not_share_one_multiple_are_refused():
    ir, *_ = _affine_ir(count=3, num_host_transfers=4)
    with pytest.raises(ValueError, match=r"num_host_transfers 4 is not a whole multiple .*'x': 3, 'y': 3, 'n': 1"):
        popxl.Session(ir)


def test_bad_uses_are_errors():
    ir, x_h2d, y_d2h, n_d2h, graph = _affine_ir(count=2, num_host_transfers=2)
    with ir.main_graph:
        with pytest.raises(ValueError, match="must be >= 1 when the graph holds host_load"):
            ops.repeat(graph, 0, popxl.constant(np.zeros(1, np.float32)), *graph.inputs[1:])
    with graph, pytest.raises(ValueError, match="graph_output in graph .* after it was called"):
        popxl.graph_output(graph.inputs[0])
    with popxl.Session(ir) as session:
        with pytest.raises(ValueError, match=r"no input for the host-to-device streams \['x'\]"):
            session.run({})
        with pytest.raises(ValueError, match=r"stream 'x' has shape \[3, 2, 3\], expected \[2, 2, 3\]"):
            session.run({x_h2d: np.zeros((3, 2, 3), np.float32)})
