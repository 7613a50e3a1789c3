"""Graphs from Python (bindings/python/plexus/graph.py, module.py, ops/call.py,
transforms.py): the PopXL user guide's "Graphs" and "Autodiff" chapters over the C API's
graphs. Subgraphs from functions and Modules, calls with positional inputs and
inputs_dict, modified inputs, repeat, graph autodiff with its expected connections, and
the errors PopXL raises for calls that do not match."""
import numpy as np
import pytest

import plexus
from plexus import ops, transforms


class Linear(plexus.Module):
    """y = x @ W (+ b): W and b are graph inputs the module keeps (the guide's Linear)."""

    def __init__(self):
        self.W = self.b = None

    def build(self, x, out_features, bias=True):
        self.W = plexus.graph_input((x.shape[-1], out_features), plexus.float32, "W")
        y = x @ self.W
        if bias:
            self.b = plexus.graph_input((out_features,), plexus.float32, "b")
            y = y + self.b
        return y


def _run(ir, *streams):
    with plexus.Session(ir) as session:
        out = session.run()
        return [out[s] for s in streams], session


def test_a_graph_from_a_function_takes_its_tensor_arguments_as_inputs():
    ir = plexus.Ir()
    with ir.main_graph:
        x = plexus.variable(np.array([[1, 2], [3, 4]], np.float32), name="x")
        graph = ir.create_graph(lambda t: t + np.ones(t.shape, np.float32), x)
        assert [(t.shape, t.dtype) for t in graph.inputs] == [((2, 2), plexus.float32)]
        assert len(graph.outputs) == 1 and graph.name.endswith("<locals>.<lambda>")
        (o,) = ops.call(graph, x)
        out = plexus.d2h_stream(o)
    (y,), _ = _run(ir, out)
    np.testing.assert_array_equal(y, [[2, 3], [4, 5]])


def test_graph_inputs_made_inside_follow_the_arguments_and_each_call_binds_its_own():
    def increment(t):
        value = plexus.graph_input(t.shape, t.dtype, "value")
        return t + value

    ir = plexus.Ir()
    with ir.main_graph:
        x = plexus.variable(np.full((2, 2), 0.5, np.float32), name="x")
        graph = ir.create_graph(increment, x)
        assert [t.name for t in graph.inputs] == ["t", "value"]
        one = plexus.variable(np.ones((2, 2), np.float32), name="one")
        two = plexus.variable(np.full((2, 2), 2, np.float32), name="two")
        (o,) = ops.call(graph, x, one)
        (o,) = ops.call(graph, o, inputs_dict={graph.inputs[1]: two})
        out = plexus.d2h_stream(o)
    (y,), _ = _run(ir, out)
    np.testing.assert_array_equal(y, np.full((2, 2), 3.5))


def test_a_module_graph_called_with_inputs_dict_and_its_gradient_graph():
    rng = np.random.default_rng(3)
    x0, w0, b0 = (rng.normal(size=s).astype(np.float32) for s in ((2, 3), (3, 2), (2,)))
    ir = plexus.Ir()
    with ir.main_graph:
        x = plexus.variable(x0, name="x")
        W = plexus.variable(w0, name="W")
        b = plexus.variable(b0, name="b")
        linear = Linear()
        graph = ir.create_graph(linear, x, out_features=2)
        fwd = ops.call_with_info(graph, x, inputs_dict={linear.W: W, linear.b: b})
        assert fwd.called_graph == graph and fwd.inputs == (x, W, b)
        assert fwd.parent_to_graph(W) == linear.W and fwd.graph_to_parent(linear.b) == b
        grad = transforms.autodiff(graph)
        assert grad.forward_graph == graph
        assert [c.connection_type for c in grad.expected_inputs][0] is transforms.ExpectedConnectionType.FwdGrad
        assert [c.fwd_tensor for c in grad.expected_outputs] == list(graph.inputs)
        seed = plexus.constant(np.ones((2, 2), np.float32))
        bwd = ops.call_with_info(grad.graph, seed, inputs_dict=grad.inputs_dict(fwd))
        grads = grad.fwd_parent_ins_to_grad_parent_outs(fwd, bwd)
        assert set(grads) == {x, W, b}
        streams = [plexus.d2h_stream(fwd.outputs[0])] + [plexus.d2h_stream(grads[t]) for t in (x, W, b)]
    (y, dx, dw, db), _ = _run(ir, *streams)
    np.testing.assert_allclose(y, x0 @ w0 + b0, rtol=1e-6)
    np.testing.assert_allclose(dx, np.ones((2, 2)) @ w0.T, rtol=1e-6)
    np.testing.assert_allclose(dw, x0.T @ np.ones((2, 2)), rtol=1e-6)
    np.testing.assert_allclose(db, [2, 2], rtol=1e-6)


def test_repeat_feeds_the_outputs_back_to_the_first_inputs():
    ir = plexus.Ir()
    with ir.main_graph:
        x = plexus.variable(np.ones((2, 2), np.float32), name="x")
        W = plexus.variable(np.ones((2, 2), np.float32), name="W")
        b = plexus.variable(np.ones(2, np.float32), name="b")
        linear = Linear()
        graph = ir.create_graph(linear, x, out_features=2)
        streams = [plexus.d2h_stream(ops.repeat(graph, n, x, inputs_dict={linear.W: W, linear.b: b})[0])
                   for n in (0, 1, 2)]
    ys, _ = _run(ir, *streams)
    # x -> 2x + 1 per iteration from ones: 1, 3, 7.
    for y, want in zip(ys, (1, 3, 7)):
        np.testing.assert_array_equal(y, np.full((2, 2), want))


def test_repeat_with_info_maps_the_inputs_and_the_last_iterations_outputs():
    ir = plexus.Ir()
    with ir.main_graph:
        x = plexus.variable(np.ones(2, np.float32), name="x")
        k = plexus.variable(np.full(2, 3, np.float32), name="k")
        graph = ir.create_graph(lambda c, step: c + step, x, k)
        info = ops.repeat_with_info(graph, 4, x, k)
        assert info.called_graph == graph and info.inputs == (x, k)
        assert info.graph_to_parent(graph.inputs[1]) == k and info.parent_to_graph(x) == graph.inputs[0]
        assert info.graph_to_parent(graph.outputs[0]) == info.outputs[0]
        with pytest.raises(NotImplementedError, match="passed by value"):
            info.set_parent_input_modified(k)
        out = plexus.d2h_stream(info.outputs[0])
    (y,), _ = _run(ir, out)
    np.testing.assert_array_equal(y, [13, 13])  # 1 + 4 * 3


def test_a_repeated_graph_with_a_by_ref_input_is_refused():
    def bump(c, p: plexus.TensorByRef):
        ops.scaled_add_(p, plexus.constant(np.ones(2, np.float32)))
        return c + p

    ir = plexus.Ir()
    with ir.main_graph:
        v = plexus.variable(np.zeros(2, np.float32), name="v")
        graph = ir.create_graph(bump, v, v)
        with pytest.raises(NotImplementedError, match="TensorByRef"):
            ops.repeat(graph, 2, v, v)


def _updated(mark):
    """v after one run of a graph doing p += 10 on input p, called on variable v, with the
    input marked as `mark` says ("by_ref", "after" the call, or "no")."""
    ir = plexus.Ir()
    with ir.main_graph:
        v = plexus.variable(np.array([1, 2, 3], np.float32), name="v")

        def step(p):
            if mark == "by_ref":
                p = plexus.graph_input(p.shape, p.dtype, "q", by_ref=True)
            return ops.scaled_add_(p, plexus.constant(np.full(3, 10, np.float32)))

        graph = ir.create_graph(step, v) if mark != "by_ref" else ir.create_graph(lambda: step(v))
        info = ops.call_with_info(graph, v)
        if mark == "after":
            info.set_parent_input_modified(v)
    with plexus.Session(ir) as session:
        session.run()
        return session.get_tensor_data(v)


def test_writes_reach_the_caller_only_through_modified_inputs():
    np.testing.assert_array_equal(_updated("no"), [1, 2, 3])
    np.testing.assert_array_equal(_updated("after"), [11, 12, 13])
    np.testing.assert_array_equal(_updated("by_ref"), [11, 12, 13])


def test_a_tensor_by_ref_hint_marks_the_input_modified_at_every_call():
    def step(p: plexus.TensorByRef):
        ops.scaled_add_(p, plexus.constant(np.ones(2, np.float32)))

    ir = plexus.Ir()
    with ir.main_graph:
        v = plexus.variable(np.zeros(2, np.float32), name="v")
        graph = ir.create_graph(step, v)
        assert graph.outputs == ()
        ops.call(graph, v)
        ops.call(graph, v)
    with plexus.Session(ir) as session:
        session.run()
        np.testing.assert_array_equal(session.get_tensor_data(v), [2, 2])


def test_lists_and_var_args_of_tensors_become_inputs_named_by_position():
    def total(*xs, scale=1.0):
        out = xs[0]
        for t in xs[1:]:
            out = out + t
        return out * scale

    ir = plexus.Ir()
    with ir.main_graph:
        a = plexus.variable(np.ones(2, np.float32))
        graph = ir.create_graph(total, a, a, a, scale=2.0)
        assert [t.name for t in graph.inputs] == ["xs_0", "xs_1", "xs_2"]
        out = plexus.d2h_stream(ops.call(graph, [a, a], a)[0])
    (y,), _ = _run(ir, out)
    np.testing.assert_array_equal(y, [6, 6])
    with ir.main_graph:
        with pytest.raises(TypeError, match="mixture of Tensors"):
            ir.create_graph(lambda xs: xs[0], [a, 1])


def test_calls_that_do_not_match_the_graph_are_errors():
    ir = plexus.Ir()
    with ir.main_graph:
        x = plexus.variable(np.zeros((2, 3), np.float32), name="x")
        wrong = plexus.variable(np.zeros((3, 2), np.float32), name="wrong")
        graph = ir.create_graph(lambda t: ops.tanh(t), x)
        with pytest.raises(ValueError, match="Too many inputs"):
            ops.call(graph, x, x)
        with pytest.raises(ValueError, match="Not enough inputs.*'t'"):
            ops.call(graph)
        with pytest.raises(ValueError, match="Not enough inputs.*'t'.*check_inputs=False"):
            ops.call(graph, check_inputs=False)
        with pytest.raises(ValueError, match="given twice"):
            ops.call(graph, x, inputs_dict={graph.inputs[0]: x})
        with pytest.raises(ValueError, match="not an input"):
            ops.call(graph, inputs_dict={x: x})
        with pytest.raises(plexus.ShapeMismatch, match="float32\\[3,2\\]"):
            ops.call(graph, wrong)
        with pytest.raises(ValueError, match="must be >= 0"):
            ops.repeat(graph, -1, x)
        info = ops.call_with_info(graph, x)
        with pytest.raises(ValueError, match="not an input of this call"):
            info.set_parent_input_modified(wrong)
        with pytest.raises(TypeError, match="must be a subgraph"):
            ops.call(ir.main_graph, x)
        two_out = ir.create_graph(lambda t: (t, ops.tanh(t)), x)
        with pytest.raises(ValueError, match="greater than or equal"):
            ops.repeat(two_out, 1, x)


def test_graphs_that_cannot_be_made_are_errors():
    ir = plexus.Ir()
    with ir.main_graph:
        x = plexus.variable(np.zeros(2, np.float32), name="x")
        with pytest.raises(ValueError, match="do not match the signature"):
            ir.create_graph(lambda t: t, x, x)
        with pytest.raises(TypeError, match="Callable"):
            ir.create_graph(3, x)
        with pytest.raises(ValueError, match="None, a Tensor or an iterable"):
            ir.create_graph(lambda t: 3, x)
        with pytest.raises(NotImplementedError, match="build"):
            ir.create_graph(plexus.Module(), x)
        with pytest.raises(plexus.InvalidArgument, match="main"):
            plexus.graph_input((2,), plexus.float32, "in_main")

        def uses_the_variable(t):
            return t + x  # x is a tensor of the main graph

        with pytest.raises(plexus.InvalidArgument, match="graph"):
            ir.create_graph(uses_the_variable, x)
        graph = ir.create_graph(lambda t: ops.tanh(t), x)
        with pytest.raises(plexus.InvalidArgument, match="not an output"):
            transforms.autodiff(graph, grads_provided=[graph.inputs[0]])
        assert plexus.gcg() == ir.main_graph and plexus.gmg() == ir.main_graph


def _mlp_step(reuse_code):
    """Loss and gradients of a 2-layer MLP built from one graph, tanh(x @ W), called
    twice (inlined, or reusing the graph's code), through main-graph autodiff."""
    rng = np.random.default_rng(11)
    x0 = rng.normal(size=(4, 3)).astype(np.float32)
    w0, w1 = (rng.normal(size=(3, 3)).astype(np.float32) for _ in range(2))
    ir = plexus.Ir()
    with ir.main_graph:
        x = plexus.variable(x0, name="x")
        weights = [plexus.variable(w, name=f"W{i}") for i, w in enumerate((w0, w1))]
        graph = ir.create_graph(lambda t, w: ops.tanh(t @ w), x, weights[0])
        h = x
        for w in weights:
            info = ops.call_with_info(graph, h, w, reuse_code=reuse_code)
            (h,) = info.outputs
        loss = ops.reduce_sum(h)
        grads = plexus.autodiff(loss, weights)
        streams = [plexus.d2h_stream(t) for t in [loss, *grads]]
    return _run(ir, *streams)[0], info, graph


def test_a_call_that_reuses_code_gives_the_inlined_calls_bits():
    reused, info, graph = _mlp_step(True)
    inlined, _, _ = _mlp_step(False)
    for a, b in zip(reused, inlined, strict=True):
        np.testing.assert_array_equal(a, b)
    assert info.graph_to_parent(graph.outputs[0]) == info.outputs[0]
    (product,) = [t for t in graph.tensors if t not in graph.inputs + graph.outputs]
    with pytest.raises(ValueError, match="has no parent tensor: the call reuses the graph's code"):
        info.graph_to_parent(product)
    with pytest.raises(plexus.InvalidArgument, match="cannot be marked modified: the call reuses the graph's code"):
        info.set_parent_input_modified(info.inputs[1])


def _pipelined_training(mode):
    """W0, W1 after 2 steps of a two-stage pipeline (blocks B1, B2, 4 micro-batches), each
    block's layer relu(x @ W) written out (`flat`), a call of one graph, inlined (`inlined`)
    or reusing code (`reuse`), or a repeat of it once (`repeat`), which runs on its block's
    device, and so does its gradient."""
    rng = np.random.default_rng(5)
    ir = plexus.Ir()
    with ir.main_graph:
        x = plexus.h2d_stream((8, 16), plexus.float32, name="x")
        w0 = plexus.variable(rng.normal(size=(16, 16)).astype(np.float32), name="W0")
        w1 = plexus.variable(rng.normal(size=(16, 16)).astype(np.float32), name="W1")
        layer = ir.create_graph(lambda t, w: ops.relu(t @ w), plexus.constant(np.zeros((8, 16), np.float32)), w0)

        def apply(t, w):
            if mode == "flat":
                return ops.relu(t @ w)
            if mode == "repeat":
                return ops.repeat(layer, 1, t, w)[0]
            return ops.call(layer, t, w, reuse_code=mode == "reuse")[0]

        with plexus.Block("B1"):
            h = apply(ops.host_load(x), w0)
        with plexus.Block("B2"):
            loss = ops.reduce_mean(apply(h, w1))
        for w, g in zip((w0, w1), plexus.autodiff(loss, [w0, w1])):
            ops.scaled_add_(w, g, b=-0.01)
    batches = rng.normal(size=(2, 4, 8, 16)).astype(np.float32)
    with plexus.Session(ir, stages=[["B1"], ["B2"]], gradient_accumulation=4, threads_per_device=1) as session:
        for batch in batches:
            session.run({x: batch})
        return [session.get_tensor_data(w) for w in (w0, w1)], session.memory_report()


def test_calls_and_repeats_inside_pipeline_blocks_train_like_the_flat_build():
    flat, _ = _pipelined_training("flat")
    for mode in ("inlined", "reuse", "repeat"):
        weights, report = _pipelined_training(mode)
        for a, b in zip(weights, flat, strict=True):
            np.testing.assert_array_equal(a, b, err_msg=mode)
        assert len(report["devices"]) == 2
