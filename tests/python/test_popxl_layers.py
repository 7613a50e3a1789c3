"""popxl.ops' layer ops (bindings/python/popxl/ops/conv.py, pool.py, group_norm.py,
scaled_add.py, io_tile_copy.py over plexus.layers): each forward against
torch.nn.functional (numpy for scaled_add) on the same arrays, run on a session; the
gradients of conv, average_pool and group_norm from plexus.autodiff against torch's
autograd (float64 in torch; relative tolerance RTOL, absolute ATOL); and the errors
PopXL's arguments give."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import plexus
import popxl
import popxl.ops as ops

RTOL, ATOL = 1e-5, 1e-6
RNG = np.random.default_rng(34)


def _normal(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def _run(build):
    """Builds with build() in the main graph (in sequence); build returns {key: tensor}.
    Runs once; returns {key: array}."""
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence():
        streams = {}
        for key, t in build().items():
            streams[key] = popxl.d2h_stream(t.shape, t.dtype, name=key)
            ops.host_store(streams[key], t)
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run()
    return {key: out[stream] for key, stream in streams.items()}


def _torch(array):
    return torch.tensor(array, dtype=torch.float64, requires_grad=True)


def _close(actual, expected):
    np.testing.assert_allclose(actual, np.asarray(expected.detach() if torch.is_tensor(expected) else expected),
                               rtol=RTOL, atol=ATOL)


# --- conv ------------------------------------------------------------------------------

# (label, x shape, weight shape, conv kwargs, torch's F.pad of x (left, right, top, bottom), torch kwargs)
CONV_CASES = [
    ("plain", (2, 3, 7, 6), (4, 3, 3, 3), {}, (0, 0, 0, 0), {}),
    ("stride", (2, 3, 7, 8), (4, 3, 3, 2), dict(stride=(2, 3)), (0, 0, 0, 0), dict(stride=(2, 3))),
    ("asymmetric padding", (1, 2, 5, 6), (3, 2, 3, 3), dict(padding=(2, 0, 1, 3)), (0, 3, 2, 1), {}),
    ("dilation", (1, 2, 9, 8), (3, 2, 3, 2), dict(dilation=(2, 3), padding=(1, 1, 1, 1)), (1, 1, 1, 1),
     dict(dilation=(2, 3))),
    ("groups", (2, 4, 6, 6), (6, 2, 3, 3), dict(groups=2, stride=(2, 1), padding=(1, 0, 1, 2)), (0, 2, 1, 1),
     dict(groups=2, stride=(2, 1))),
    # H 6, kernel 3, stride 2: 3 outputs, one row of padding; W 5, kernel 2, stride 1: 5, one column
    ("same_upper", (1, 2, 6, 5), (2, 2, 3, 2), dict(stride=(2, 1), pad_type="same_upper", padding=(5, 5, 5, 5)),
     (0, 1, 0, 1), dict(stride=(2, 1))),
    ("same_lower", (1, 2, 6, 5), (2, 2, 3, 2), dict(stride=(2, 1), pad_type="same_lower"), (1, 0, 1, 0),
     dict(stride=(2, 1))),
    ("valid", (1, 2, 6, 5), (2, 2, 3, 2), dict(padding=(1, 1, 1, 1), pad_type="valid"), (0, 0, 0, 0), {}),
]


@pytest.mark.parametrize("label, x_shape, w_shape, kwargs, pad, torch_kwargs", CONV_CASES,
                         ids=[c[0] for c in CONV_CASES])
def test_conv_matches_torch_conv2d(label, x_shape, w_shape, kwargs, pad, torch_kwargs):
    x0, w0 = _normal(*x_shape), _normal(*w_shape)
    out = _run(lambda: {"y": ops.conv(popxl.variable(x0), popxl.variable(w0), **kwargs)})
    expected = F.conv2d(F.pad(_torch(x0), pad), _torch(w0), **torch_kwargs)
    assert out["y"].shape == tuple(expected.shape)
    _close(out["y"], expected)


def test_same_pad_types_give_ceil_of_size_over_stride_outputs():
    x0, w0 = _normal(1, 1, 7, 9), _normal(1, 1, 4, 3)

    def build():
        x, w = popxl.variable(x0), popxl.variable(w0)
        return {p: ops.conv(x, w, stride=(2, 4), pad_type=p) for p in ("same_upper", "same_lower")}

    out = _run(build)
    assert out["same_upper"].shape == out["same_lower"].shape == (1, 1, 4, 3)


def test_conv_bias_absent_and_present_through_plexus_layers():
    """popxl's conv has no bias (PopXL's); plexus.layers.conv2d takes one, as torch's."""
    x0, w0, b0 = _normal(2, 4, 5, 5), _normal(6, 2, 3, 3), _normal(6)

    def build():
        x, w, b = popxl.variable(x0), popxl.variable(w0), popxl.variable(b0)
        return {"none": plexus.layers.conv2d(x, w, None, pads=(1, 0, 0, 1), groups=2),
                "bias": plexus.layers.conv2d(x, w, b, pads=(1, 0, 0, 1), groups=2)}

    out = _run(build)
    padded = F.pad(_torch(x0), (0, 1, 1, 0))
    _close(out["none"], F.conv2d(padded, _torch(w0), groups=2))
    _close(out["bias"], F.conv2d(padded, _torch(w0), _torch(b0), groups=2))


def test_conv_of_a_1d_input_matches_torch_conv1d():
    x0, w0 = _normal(2, 3, 11), _normal(4, 3, 3)
    out = _run(lambda: {"y": ops.conv(popxl.variable(x0), popxl.variable(w0), stride=(2,), padding=(2, 1),
                                      dilation=(2,))})
    _close(out["y"], F.conv1d(F.pad(_torch(x0), (2, 1)), _torch(w0), stride=2, dilation=2))


def _gradients(inputs, forward, torch_forward):
    """(plexus's [loss, d input...], torch's) for loss = sum(forward(*inputs) * R), R fixed."""
    def build():
        tensors = [popxl.variable(a) for a in inputs]
        y = forward(*tensors)
        build.r = _normal(*y.shape)
        loss = ops.reduce_sum(ops.mul(y, popxl.constant(build.r)))
        grads = plexus.autodiff(loss, tensors)
        return {"loss": loss, **{f"d{i}": g for i, g in enumerate(grads)}}

    out = _run(build)
    leaves = [_torch(a) for a in inputs]
    loss = (torch_forward(*leaves) * torch.tensor(build.r, dtype=torch.float64)).sum()
    loss.backward()
    return [out["loss"]] + [out[f"d{i}"] for i in range(len(inputs))], [loss] + [t.grad for t in leaves]


def test_conv_gradients_match_torch():
    ours, theirs = _gradients(
        [_normal(2, 4, 7, 6), _normal(6, 2, 3, 2)],
        lambda x, w: ops.conv(x, w, stride=(2, 1), padding=(1, 0, 2, 1), dilation=(1, 2), groups=2),
        lambda x, w: F.conv2d(F.pad(x, (0, 1, 1, 2)), w, stride=(2, 1), dilation=(1, 2), groups=2))
    for a, b in zip(ours, theirs):
        _close(a, b)


# --- pooling ---------------------------------------------------------------------------

# (label, x shape, kwargs; torch's own padding argument: symmetric, so ceil_mode is torch's rule)
POOL_CASES = [
    ("kernel", (2, 3, 6, 7), dict(kernel_size=(3, 2), stride=(3, 2))),
    ("stride 1 default", (1, 2, 5, 5), dict(kernel_size=(2, 3))),
    ("stride and padding", (2, 2, 7, 6), dict(kernel_size=(3, 3), stride=(2, 2), padding=(1, 1, 1, 1))),
    ("ceil_mode", (1, 2, 7, 6), dict(kernel_size=(3, 2), stride=(2, 2), ceil_mode=True)),
    ("ceil_mode and padding", (1, 2, 6, 7), dict(kernel_size=(3, 3), stride=(2, 3), padding=(1, 1, 1, 1),
                                                   ceil_mode=True)),
]


def _torch_pool_kwargs(kwargs):
    n = len(kwargs["kernel_size"])
    return dict(kernel_size=kwargs["kernel_size"], stride=kwargs.get("stride", (1,) * n),
                padding=tuple(kwargs.get("padding", (0,) * 2 * n)[:n]), ceil_mode=kwargs.get("ceil_mode", False))


@pytest.mark.parametrize("label, shape, kwargs", POOL_CASES, ids=[c[0] for c in POOL_CASES])
def test_pools_match_torch(label, shape, kwargs):
    x0 = _normal(*shape)

    def build():
        x = popxl.variable(x0)
        return {"max": ops.max_pool(x, **kwargs), "average": ops.average_pool(x, **kwargs)}

    out = _run(build)
    expected_max = F.max_pool2d(_torch(x0), **_torch_pool_kwargs(kwargs))
    expected_avg = F.avg_pool2d(_torch(x0), count_include_pad=False, **_torch_pool_kwargs(kwargs))
    assert out["max"].shape == out["average"].shape == tuple(expected_max.shape)
    _close(out["max"], expected_max)
    _close(out["average"], expected_avg)


def test_pools_with_asymmetric_padding_exclude_it():
    """Padding (top 2, left 0, bottom 1, right 1): max against torch on x padded with -inf;
    average against the window sums of x padded with zeros over those of a mask of ones."""
    x0 = _normal(1, 2, 5, 6)
    kwargs = dict(kernel_size=(3, 2), stride=(2, 2), padding=(2, 0, 1, 1))

    def build():
        x = popxl.variable(x0)
        return {"max": ops.max_pool(x, **kwargs), "average": ops.average_pool(x, **kwargs)}

    out = _run(build)
    pad = (0, 1, 2, 1)
    _close(out["max"], F.max_pool2d(F.pad(_torch(x0), pad, value=-np.inf), (3, 2), (2, 2)))
    sums = F.avg_pool2d(F.pad(_torch(x0), pad), (3, 2), (2, 2))
    counts = F.avg_pool2d(F.pad(torch.ones(1, 1, 5, 6, dtype=torch.float64), pad), (3, 2), (2, 2))
    _close(out["average"], sums / counts)


def test_max_pool_dilation_and_auto_pad():
    x0 = _normal(1, 2, 9, 8)

    def build():
        x = popxl.variable(x0)
        return {"dilated": ops.max_pool(x, (2, 3), stride=(2, 1), dilation=(3, 2), padding=(1, 0, 1, 0)),
                "same_upper": ops.max_pool(x, (2, 3), stride=(2, 2), auto_pad="same_upper")}

    out = _run(build)
    _close(out["dilated"], F.max_pool2d(_torch(x0), (2, 3), (2, 1), padding=(1, 0), dilation=(3, 2)))
    # H 9, kernel 2, stride 2: 5 rows, 1 of padding at the end; W 8, kernel 3, stride 2: 4, 1 at the end
    _close(out["same_upper"], F.max_pool2d(F.pad(_torch(x0), (0, 1, 0, 1), value=-np.inf), (2, 3), (2, 2)))


def test_pools_of_a_1d_input_match_torch():
    x0 = _normal(2, 3, 10)

    def build():
        x = popxl.variable(x0)
        return {"max": ops.max_pool(x, (3,), stride=(2,), padding=(1, 1), ceil_mode=True),
                "average": ops.average_pool(x, (3,), stride=(2,), padding=(1, 1), ceil_mode=True)}

    out = _run(build)
    _close(out["max"], F.max_pool1d(_torch(x0), 3, 2, padding=1, ceil_mode=True))
    _close(out["average"], F.avg_pool1d(_torch(x0), 3, 2, padding=1, ceil_mode=True, count_include_pad=False))


def test_storage_order_column_gives_the_same_values():
    x0 = _normal(1, 1, 4, 4)

    def build():
        x = popxl.variable(x0)
        return {o: ops.max_pool(x, (2, 2), stride=(2, 2), storage_order=o) for o in ("row", "column")}

    out = _run(build)
    np.testing.assert_array_equal(out["row"], out["column"])


def test_average_pool_gradient_matches_torch():
    ours, theirs = _gradients(
        [_normal(2, 3, 7, 6)],
        lambda x: ops.average_pool(x, (3, 2), stride=(2, 2), padding=(1, 1, 1, 1), ceil_mode=True),
        lambda x: F.avg_pool2d(x, (3, 2), (2, 2), padding=(1, 1), ceil_mode=True, count_include_pad=False))
    for a, b in zip(ours, theirs):
        _close(a, b)


# --- group_norm ------------------------------------------------------------------------

@pytest.mark.parametrize("shape, groups", [((2, 4), 2), ((2, 6, 3, 4), 3), ((3, 4, 5), 1), ((2, 4, 2, 2), 4)])
def test_group_norm_matches_torch(shape, groups):
    x0, w0, b0 = _normal(*shape), _normal(shape[1]), _normal(shape[1])
    out = _run(lambda: {"y": ops.group_norm(popxl.variable(x0), popxl.variable(w0), popxl.variable(b0), groups,
                                            eps=1e-3)})
    _close(out["y"], F.group_norm(_torch(x0), groups, _torch(w0), _torch(b0), eps=1e-3))


def test_group_norm_gradients_match_torch():
    ours, theirs = _gradients(
        [_normal(2, 6, 3, 4), _normal(6), _normal(6)],
        lambda x, w, b: ops.group_norm(x, w, b, 3),
        lambda x, w, b: F.group_norm(x, 3, w, b, eps=1e-5))
    for a, b in zip(ours, theirs):
        _close(a, b)


@pytest.mark.parametrize("shape", [(3, 5), (2, 4, 3), (2, 3, 4, 2)])
def test_layer_norm_is_group_norm_of_one_group(shape):
    # PopXL's layer_norm normalises each sample over all of dim 1 onwards, weight and bias per
    # channel: for (N, C) that is F.layer_norm over C; for more dims it is not the last dim's.
    x0, w0, b0 = _normal(*shape), _normal(shape[1]), _normal(shape[1])
    out = _run(lambda: {"y": ops.layer_norm(popxl.variable(x0), popxl.variable(w0), popxl.variable(b0), eps=1e-3)})
    _close(out["y"], F.group_norm(_torch(x0), 1, _torch(w0), _torch(b0), eps=1e-3))
    if len(shape) == 2:
        _close(out["y"], F.layer_norm(_torch(x0), [shape[1]], _torch(w0), _torch(b0), eps=1e-3))


# --- scaled_add and io_tile_copy -------------------------------------------------------

X0, Y0 = _normal(3, 4), _normal(3, 4)


@pytest.mark.parametrize("a, b", [(1.0, 1.0), (0.9, 0.1), (-2.5, 1.0)])
@pytest.mark.parametrize("as_tensor", [False, True], ids=["float", "tensor"])
def test_scaled_add_matches_numpy(a, b, as_tensor):
    def build():
        fa = popxl.variable(np.float32(a)) if as_tensor else a
        fb = popxl.constant(np.array([b], np.float32)) if as_tensor else b
        return {"y": ops.scaled_add(popxl.variable(X0), popxl.variable(Y0), fa, fb)}

    expected = np.float32(a) * X0 + np.float32(b) * Y0
    np.testing.assert_allclose(_run(build)["y"], expected, rtol=1e-6, atol=1e-7)


def test_scaled_add_defaults_and_a_new_tensor():
    def build():
        x = popxl.variable(X0)
        y = ops.scaled_add(x, popxl.variable(Y0))
        assert y.id != x.id
        return {"y": y, "x": x}

    out = _run(build)
    np.testing.assert_array_equal(out["y"], X0 + Y0)
    np.testing.assert_array_equal(out["x"], X0)


def test_io_tile_copy_equals_its_input_in_a_tensor_of_its_own():
    def build():
        x = popxl.variable(X0)
        copy = ops.io_tile_copy(x)
        assert copy.id != x.id and copy.shape == x.shape and copy.dtype == x.dtype
        ops.scaled_add_(x, popxl.constant(Y0))  # x changes after the copy; the copy does not
        return {"copy": copy, "x": x}

    out = _run(build)
    np.testing.assert_array_equal(out["copy"], X0)
    np.testing.assert_allclose(out["x"], X0 + Y0, rtol=1e-6)


# --- errors ----------------------------------------------------------------------------

def _raises(error, words, build):
    ir = popxl.Ir()
    with ir.main_graph:
        with pytest.raises(error) as info:
            build()
    for word in words:
        assert word in str(info.value), (word, str(info.value))


X4 = np.zeros((1, 4, 5, 5), np.float32)
W4 = np.zeros((2, 4, 3, 3), np.float32)

BAD = [
    ("kernel_size length", plexus.InvalidArgument, ["kernel_size"], lambda x, w: ops.max_pool(x, (2, 2, 2))),
    ("kernel_size zero", plexus.InvalidArgument, ["kernel_size"], lambda x, w: ops.average_pool(x, (0, 2))),
    ("padding length", plexus.InvalidArgument, ["padding"], lambda x, w: ops.conv(x, w, padding=(1, 1))),
    ("negative padding", plexus.InvalidArgument, ["padding"], lambda x, w: ops.max_pool(x, (2, 2),
                                                                                          padding=(0, -1, 0, 0))),
    ("stride length", plexus.InvalidArgument, ["stride"], lambda x, w: ops.conv(x, w, stride=(1, 1, 1))),
    ("groups", plexus.ShapeMismatch, ["groups=3"], lambda x, w: ops.conv(x, w, groups=3)),
    ("weight channels", plexus.ShapeMismatch, ["weight"], lambda x, w: ops.conv(x, w, groups=2)),
    ("weight rank", plexus.ShapeMismatch, ["weight"], lambda x, w: ops.conv(x, ops.reshape(w, [2, 4, 9]))),
    ("pad_type", ValueError, ["'same'"], lambda x, w: ops.conv(x, w, pad_type="same")),
    ("auto_pad", ValueError, ["'SAME_UPPER'"], lambda x, w: ops.max_pool(x, (2, 2), auto_pad="SAME_UPPER")),
    ("storage_order", ValueError, ["storage_order"], lambda x, w: ops.max_pool(x, (2, 2), storage_order="col")),
    ("3-D input", NotImplementedError, ["3-D", "t"], lambda x, w: ops.max_pool(ops.reshape(x, [1, 4, 5, 5, 1]),
                                                                               (2, 2, 1))),
    ("out_pads", NotImplementedError, ["out_pads"], lambda x, w: ops.max_pool(x, (2, 2), out_pads=(1, 0, 0, 0))),
    ("in_dilations", NotImplementedError, ["in_dilations"], lambda x, w: ops.average_pool(x, (2, 2),
                                                                                          in_dilations=(2, 1))),
    ("average dilation", NotImplementedError, ["dilation"], lambda x, w: ops.average_pool(x, (2, 2),
                                                                                          dilation=(2, 2))),
    ("num_groups", plexus.ShapeMismatch, ["num_groups=3"],
     lambda x, w: ops.group_norm(x, popxl.variable(np.ones(4, np.float32)), popxl.variable(np.ones(4, np.float32)),
                                 3)),
    ("group_norm weight", plexus.ShapeMismatch, ["weight"],
     lambda x, w: ops.group_norm(x, popxl.variable(np.ones(3, np.float32)), popxl.variable(np.ones(4, np.float32)),
                                 2)),
    ("conv t not a Tensor", TypeError, ["`t`"], lambda x, w: ops.conv(X4, w)),
    ("scaled_add shapes", plexus.ShapeMismatch, ["Y"], lambda x, w: ops.scaled_add(x, w)),
    ("scaled_add factor", plexus.ShapeMismatch, ["a"],
     lambda x, w: ops.scaled_add(x, x, a=popxl.variable(np.ones(2, np.float32)))),
    ("scaled_add factor type", TypeError, ["b"], lambda x, w: ops.scaled_add(x, x, b="2")),
    ("io_tile_copy array", TypeError, ["`t`"], lambda x, w: ops.io_tile_copy(X4)),
]


@pytest.mark.parametrize("label, error, words, call", BAD, ids=[b[0] for b in BAD])
def test_bad_arguments_raise_naming_them(label, error, words, call):
    _raises(error, words, lambda: call(popxl.variable(X4), popxl.variable(W4)))


def test_a_tensor_of_another_graph_is_refused():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(X4)
    graph = ir.create_empty_graph("sub")
    with graph:
        with pytest.raises(ValueError, match="`t`.*current graph 'sub'"):
            ops.io_tile_copy(x)
        with pytest.raises(ValueError, match="`weight`"):
            ops.conv(popxl.graph_input([1, 4, 5, 5], popxl.float32), x)
