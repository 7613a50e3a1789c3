"""plexus.ops: the functions made from the runtime's op catalog, their argument forms, and
their numbers against numpy (docs/ops.md), including gradients and collectives."""
import inspect

import numpy as np
import pytest

import plexus
from plexus import ops
from plexus.ops import catalog

RNG = np.random.default_rng(7)


def _evaluate(build, replication=1, **session_options):
    """Runs build() inside a fresh IR's main graph; every Tensor it returns (a dict
    name -> Tensor) is streamed out; returns name -> host array of one run."""
    ir = plexus.Ir(replication=replication)
    with ir.main_graph:
        tensors = build()
        streams = {name: plexus.d2h_stream(t, name=name) for name, t in tensors.items()}
    with plexus.Session(ir, **session_options) as session:
        out = session.run()
    return {name: out[s] for name, s in streams.items()}


def _randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def test_every_catalog_op_is_a_function_with_a_docstring():
    schemas = catalog.schemas()
    assert {"matmul", "add", "gelu", "softmax_cross_entropy", "replicated_all_gather", "remote_load"} <= set(schemas)
    names = set(dir(ops))
    for name, schema in schemas.items():
        assert name in names
        fn = getattr(ops, name)
        assert callable(fn) and fn.__name__ == name
        assert inspect.getdoc(fn)
        assert schema.min_inputs <= schema.max_inputs
    assert schemas["matmul"].signature() == "matmul(x0, x1, transpose_a=0, transpose_b=0)"
    assert "docs/ops.md" in ops.gelu.__doc__
    for name in ("replicated_all_reduce", "replicated_all_reduce_", "replicated_all_gather",
                 "replicated_reduce_scatter", "replica_sharded_slice"):
        # PopXL's positional orders over the catalog's op (test_collectives_take_popxls_...)
        fn = getattr(ops.collectives, name)
        assert fn.__name__ == name and "PopXL" in inspect.getdoc(ops.collectives) and inspect.getdoc(fn)
    assert schemas["adamw_"].inplace and schemas["replicated_all_reduce"].communicates
    assert not schemas["argmax"].differentiable


def test_elementwise_and_broadcasting_ops_match_numpy():
    a, b, row = _randn(3, 4), _randn(3, 4) + 3.0, _randn(4)
    i, j = np.array([[7, -7], [5, 0]], np.int32), np.array([2, 3], np.int32)

    def build():
        ta, tb, tr = plexus.constant(a), plexus.variable(b), plexus.constant(row)
        ti, tj = plexus.constant(i), plexus.constant(j)
        return dict(add=ops.add(ta, tr), sub=ta - tb, mul=ta * 2.0, div=ops.div(ta, tb), rsub=1.0 - ta,
                    rdiv=2.0 / tb, neg=-ta, relu=ops.relu(ta), gelu=ops.gelu(ta), eq=ops.equal(ta, ta * 1.0),
                    iadd=ti + tj, imul=ops.mul(ti, tj), isub=ti - 1, ineg=ops.neg(ti))

    out = _evaluate(build)
    np.testing.assert_allclose(out["add"], a + row, rtol=1e-6)
    np.testing.assert_allclose(out["sub"], a - b, rtol=1e-6)
    np.testing.assert_allclose(out["mul"], a * 2, rtol=1e-6)
    np.testing.assert_allclose(out["div"], a / b, rtol=1e-6)
    np.testing.assert_allclose(out["rsub"], 1 - a, rtol=1e-6)
    np.testing.assert_allclose(out["rdiv"], 2 / b, rtol=1e-6)
    np.testing.assert_array_equal(out["neg"], -a)
    np.testing.assert_array_equal(out["relu"], np.maximum(a, 0))
    gelu = 0.5 * a * (1 + np.tanh(np.sqrt(2 / np.pi) * (a + 0.044715 * a ** 3)))
    np.testing.assert_allclose(out["gelu"], gelu, rtol=1e-5, atol=1e-6)
    assert out["eq"].dtype == np.bool_ and out["eq"].all()
    np.testing.assert_array_equal(out["iadd"], i + j)
    np.testing.assert_array_equal(out["imul"], i * j)
    np.testing.assert_array_equal(out["isub"], i - 1)
    np.testing.assert_array_equal(out["ineg"], -i)
    assert out["iadd"].dtype == np.int32


def test_shape_ops_reductions_and_casts_match_numpy():
    x = _randn(2, 3, 4)
    f = np.array([-2.7, 2.7, 1e10, -1e10, np.nan], np.float32)

    def build():
        t = plexus.constant(x)
        return dict(reshape=ops.reshape(t, (4, -1)), transpose=ops.transpose(t, perm=(2, 0, 1)),
                    reverse=ops.transpose(t), expand=ops.expand(plexus.constant(x[:, :1, :]), (2, 3, 4)),
                    flatten=ops.flatten(t), sum_all=ops.reduce_sum(t), sum_1=ops.reduce_sum(t, axes=[1]),
                    mean_keep=ops.reduce_mean(t, axes=[0, 2], keepdims=1), argmax=ops.argmax(t, axis=1),
                    cast=ops.cast(plexus.constant(f), plexus.int32), to_float=ops.cast(ops.argmax(t), np.float32))

    out = _evaluate(build)
    np.testing.assert_array_equal(out["reshape"], x.reshape(4, 6))
    np.testing.assert_array_equal(out["transpose"], x.transpose(2, 0, 1))
    np.testing.assert_array_equal(out["reverse"], x.transpose())
    np.testing.assert_array_equal(out["expand"], np.broadcast_to(x[:, :1, :], (2, 3, 4)))
    np.testing.assert_array_equal(out["flatten"], x.reshape(2, 12))
    np.testing.assert_allclose(out["sum_all"], x.sum(), rtol=1e-5)
    assert out["sum_all"].shape == ()
    np.testing.assert_allclose(out["sum_1"], x.sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(out["mean_keep"], x.mean(axis=(0, 2), keepdims=True), rtol=1e-5)
    np.testing.assert_array_equal(out["argmax"], x.argmax(axis=1))
    # Truncation toward zero, saturation, NaN -> 0 (docs/ops.md).
    np.testing.assert_array_equal(out["cast"], [-2, 2, 2**31 - 1, -2**31, 0])
    np.testing.assert_array_equal(out["to_float"], x.argmax(axis=-1).astype(np.float32))


def test_matmul_conv_and_pool_match_numpy():
    a, b = _randn(5, 7), _randn(6, 7)
    img, kernel, bias = _randn(2, 3, 6, 6), _randn(4, 3, 3, 3), _randn(4)

    def build():
        ta, tb = plexus.constant(a), plexus.constant(b)
        return dict(mm=ops.matmul(ta, tb, transpose_b=1), op=ta @ ops.transpose(tb),
                    conv=ops.conv2d(plexus.constant(img), plexus.constant(kernel), plexus.constant(bias),
                                    stride=[1, 1], padding=[1, 1]),
                    pool=ops.max_pool2d(plexus.constant(img), kernel=[2, 2]))

    out = _evaluate(build)
    np.testing.assert_allclose(out["mm"], a @ b.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["op"], a @ b.T, rtol=1e-5, atol=1e-5)
    padded = np.pad(img, ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = np.zeros((2, 4, 6, 6), np.float32)
    for oy in range(6):
        for ox in range(6):
            window = padded[:, :, oy:oy + 3, ox:ox + 3]
            conv[:, :, oy, ox] = np.einsum("nchw,fchw->nf", window, kernel)
    np.testing.assert_allclose(out["conv"], conv + bias[None, :, None, None], rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(out["pool"], img.reshape(2, 3, 3, 2, 3, 2).max(axis=(3, 5)))


def test_softmax_cross_entropy_and_its_gradient():
    logits, labels = _randn(6, 5), np.array([0, 4, 2, 2, 1, 3], np.int32)

    def build():
        z = plexus.variable(logits, name="z")
        loss = ops.softmax_cross_entropy(z, plexus.constant(labels))
        grad, = plexus.autodiff(loss, [z])
        return dict(loss=loss, grad=grad)

    out = _evaluate(build)
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(out["loss"], -log_softmax[np.arange(6), labels].mean(), rtol=1e-5)
    onehot = np.eye(5, dtype=np.float32)[labels]
    np.testing.assert_allclose(out["grad"], (np.exp(log_softmax) - onehot) / 6, rtol=1e-5, atol=1e-7)


def test_transformer_ops_match_numpy():
    x, pos = _randn(2, 3, 4), np.abs(_randn(3, 4)) + 0.1
    w, b = _randn(4) + 1.0, _randn(4)
    logits = _randn(2, 3, 5)
    labels = np.array([[0, 4, -100], [2, -100, 1]], np.int32)

    def build():
        tx, tl = plexus.constant(x), plexus.variable(logits, name="logits")
        loss = ops.softmax_cross_entropy(tl, plexus.constant(labels))
        grad, = plexus.autodiff(loss, [tl])
        return dict(exp=ops.exp(tx), sqrt=ops.sqrt(plexus.constant(pos)), tanh=ops.tanh(tx),
                    softmax=ops.softmax(tx, axis=1), log_softmax=ops.log_softmax(tx),
                    ln=ops.layer_norm(tx, plexus.constant(w), plexus.constant(b), eps=1e-3),
                    ln_plain=ops.layer_norm(tx), loss=loss, grad=grad)

    out = _evaluate(build)
    np.testing.assert_allclose(out["exp"], np.exp(x), rtol=1e-6)
    np.testing.assert_allclose(out["sqrt"], np.sqrt(pos), rtol=1e-6)
    np.testing.assert_allclose(out["tanh"], np.tanh(x), rtol=1e-6, atol=1e-7)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out["softmax"], e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    shifted = x - x.max(axis=-1, keepdims=True)
    np.testing.assert_allclose(out["log_softmax"], shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True)),
                               rtol=1e-5, atol=1e-6)
    for name, eps, scale, shift in (("ln", 1e-3, w, b), ("ln_plain", 1e-5, 1.0, 0.0)):
        normed = (x - x.mean(axis=-1, keepdims=True)) / np.sqrt(x.var(axis=-1, keepdims=True) + eps)
        np.testing.assert_allclose(out[name], normed * scale + shift, rtol=1e-5, atol=1e-5)
    # F.cross_entropy(logits.reshape(-1, 5), labels.reshape(-1), ignore_index=-100): the mean
    # over the 4 rows kept; the ignored rows get no gradient.
    rows, kept = logits.reshape(-1, 5), labels.reshape(-1) != -100
    lse = np.log(np.exp(rows - rows.max(axis=1, keepdims=True)).sum(axis=1)) + rows.max(axis=1)
    picked = rows[np.arange(6), np.where(kept, labels.reshape(-1), 0)]
    np.testing.assert_allclose(out["loss"], ((lse - picked) * kept).sum() / kept.sum(), rtol=1e-5)
    softmax = np.exp(rows - lse[:, None])
    onehot = np.eye(5, dtype=np.float32)[np.where(kept, labels.reshape(-1), 0)]
    expected = (softmax - onehot) * kept[:, None] / kept.sum()
    np.testing.assert_allclose(out["grad"], expected.reshape(2, 3, 5), rtol=1e-5, atol=1e-7)


def test_autodiff_of_a_small_mlp_matches_the_analytic_gradients():
    x, w1, w2 = _randn(4, 3), _randn(3, 5), _randn(5, 2)

    def build():
        tw1, tw2 = plexus.variable(w1, name="w1"), plexus.variable(w2, name="w2")
        h = ops.relu(ops.matmul(plexus.constant(x), tw1))
        loss = ops.reduce_mean(ops.matmul(h, tw2) * ops.matmul(h, tw2))
        g1, g2 = plexus.autodiff(loss, [tw1, tw2])
        assert (g1.shape, g2.shape) == ((3, 5), (5, 2))
        return dict(loss=loss, g1=g1, g2=g2)

    out = _evaluate(build)
    pre = x @ w1
    h = np.maximum(pre, 0)
    y = h @ w2
    dy = 2 * y / y.size
    np.testing.assert_allclose(out["loss"], (y * y).mean(), rtol=1e-5)
    np.testing.assert_allclose(out["g2"], h.T @ dy, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(out["g1"], x.T @ ((dy @ w2.T) * (pre > 0)), rtol=1e-4, atol=1e-6)


def test_optimizer_ops_update_in_place():
    w, g = _randn(8), _randn(8)
    lr, b1, b2, eps, wd = 0.01, 0.9, 0.999, 1e-8, 0.1
    ir = plexus.Ir()
    with ir.main_graph:
        tw = plexus.variable(w, name="w")
        tm, tv = plexus.variable(np.zeros(8), name="m"), plexus.variable(np.zeros(8), name="v")
        step = plexus.variable(np.float32(0), name="step")
        outputs = ops.adamw_(tw, plexus.constant(g), tm, tv, step, lr=lr, beta1=b1, beta2=b2, eps=eps,
                             weight_decay=wd)
        assert len(outputs) == 4
        sgd = plexus.variable(w, name="sgd")
        ops.scaled_add_(sgd, plexus.constant(g), a=0.5, b=-lr)
    with plexus.Session(ir) as session:
        session.run()
        values = session.get_tensors_data([tw, tm, tv, step, sgd])
    m = (1 - b1) * g
    v = (1 - b2) * g * g
    expected = w * (1 - lr * wd) - lr * (m / (1 - b1)) / (np.sqrt(v / (1 - b2)) + eps)
    np.testing.assert_allclose(values[tw], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(values[tm], m, rtol=1e-6)
    np.testing.assert_allclose(values[tv], v, rtol=1e-5)
    assert values[step] == 1
    np.testing.assert_allclose(values[sgd], 0.5 * w - lr * g, rtol=1e-6)


def test_sgd_schedule_and_clipping_of_many_gradients():
    # lr_schedule feeding sgd_momentum_'s lr input, and clip_by_global_norm_ over 20
    # gradients: 21 outputs, more than add_op's first guess of 16.
    grads = [_randn(3) for _ in range(20)]
    w = _randn(3)
    ir = plexus.Ir()
    with ir.main_graph:
        tg = [plexus.variable(g, name=f"g{i}") for i, g in enumerate(grads)]
        outputs = ops.clip_by_global_norm_(*tg, max_norm=1.0)
        assert len(outputs) == 21
        tw, buf = plexus.variable(w, name="w"), plexus.variable(np.zeros(3), name="buf")
        step = plexus.variable(np.float32(0), name="step")
        lr = ops.lr_schedule(step, base_lr=0.5, warmup_steps=4, total_steps=10, min_lr=0.0)
        ops.sgd_momentum_(tw, tg[0], buf, step, lr, momentum=0.9)
        norm = plexus.d2h_stream(outputs[0], name="norm")
    assert catalog.schemas()["clip_by_global_norm_"].signature().startswith("clip_by_global_norm_(x0, [x1, ..., x1023], ")
    with plexus.Session(ir) as session:
        out = session.run()
        values = session.get_tensors_data([tg[1], tw, buf, step])
    total = np.sqrt(sum(float(np.sum(g.astype(np.float64) ** 2)) for g in grads))
    np.testing.assert_allclose(out[norm], total, rtol=1e-6)
    coef = min(1.0, 1.0 / (total + 1e-6))
    np.testing.assert_allclose(values[tg[1]], grads[1] * coef, rtol=1e-6)
    # step 0 of the schedule: 0.5 * 1 / 4; the first SGD step copies the clipped gradient into the buffer
    np.testing.assert_allclose(values[buf], grads[0] * coef, rtol=1e-6)
    np.testing.assert_allclose(values[tw], w - 0.125 * grads[0] * coef, rtol=1e-6, atol=1e-7)
    assert values[step] == 1


def _run_collectives(build, R=4):
    """(base, out): `build(ir, v)`'s {name: tensor} run on R replicas, where v is a variable
    whose replica r holds row r of base ([R, 4] float32); out maps each name to its values
    of every replica."""
    base = np.arange(R * 4, dtype=np.float32).reshape(R, 4) ** 1.5
    ir = plexus.Ir(replication=R)
    with ir.main_graph:
        v = plexus.variable(base, name="v", replica_grouping=ir.replica_grouping(group_size=1))
        streams = {k: plexus.d2h_stream(t, name=k) for k, t in build(ir, v).items()}
    with plexus.Session(ir) as session:
        result = session.run()
    return base, {k: result[s] for k, s in streams.items()}


def test_collectives_over_all_replicas_and_within_groups():
    R = 4

    def build(ir, v):
        pairs = ir.replica_grouping(group_size=2)
        strided = ir.replica_grouping(group_size=2, stride=2)
        return dict(
            sum=ops.collectives.replicated_all_reduce(v), mean=ops.collectives.replicated_all_reduce(v, op="mean"),
            max=ops.collectives.replicated_all_reduce(v, op="max"),
            min=ops.collectives.replicated_all_reduce(v, op="min"),
            gather=ops.collectives.replicated_all_gather(v, output_shape="new_axis"),
            concat=ops.collectives.replicated_all_gather(v, output_shape="concat"),
            scatter=ops.collectives.replicated_reduce_scatter(v),
            slice=ops.collectives.replica_sharded_slice(v),
            pair_sum=ops.collectives.replicated_all_reduce(v, group=pairs),
            strided_sum=ops.collectives.replicated_all_reduce(v, replica_grouping=strided))

    base, out = _run_collectives(build, R)
    for r in range(R):
        np.testing.assert_allclose(out["sum"][r], base.sum(axis=0), rtol=1e-6)
        np.testing.assert_allclose(out["mean"][r], base.mean(axis=0), rtol=1e-6)
        np.testing.assert_array_equal(out["max"][r], base.max(axis=0))
        np.testing.assert_array_equal(out["min"][r], base.min(axis=0))
        np.testing.assert_array_equal(out["gather"][r], base)
        np.testing.assert_array_equal(out["concat"][r], base.reshape(-1))
        np.testing.assert_allclose(out["scatter"][r], base.sum(axis=0)[r:r + 1], rtol=1e-6)
        np.testing.assert_array_equal(out["slice"][r], base[r, r:r + 1])
        np.testing.assert_allclose(out["pair_sum"][r], base[r // 2 * 2:r // 2 * 2 + 2].sum(axis=0), rtol=1e-6)
        np.testing.assert_allclose(out["strided_sum"][r], base[r % 2::2].sum(axis=0), rtol=1e-6)


def test_an_int32_division_by_zero_is_a_run_error():
    ir = plexus.Ir()
    with ir.main_graph:
        d = plexus.h2d_stream((2,), plexus.int32, name="d")
        y = plexus.d2h_stream(ops.div(plexus.constant(np.array([6, 6], np.int32)), ops.host_load(d)), name="y")
    with plexus.Session(ir) as session:
        with pytest.raises(plexus.RunError, match="div"):
            session.run({d: np.array([3, 0], np.int32)})
        np.testing.assert_array_equal(session.run({d: np.array([3, 2], np.int32)})[y], [2, 3])


def test_attributes_positional_keyword_and_converted():
    x = _randn(2, 3, 4)

    def build():
        t = plexus.constant(x)
        return dict(pos=ops.reduce_sum(t, [0, 2], 1), kw=ops.reduce_sum(t, axes=(0, 2), keepdims=True),
                    np_axes=ops.reduce_sum(t, axes=np.array([0, 2])), one_axis=ops.reduce_sum(t, axes=1),
                    float_int=ops.argmax(t, axis=2.0))

    out = _evaluate(build)
    np.testing.assert_allclose(out["pos"], x.sum(axis=(0, 2), keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(out["kw"], out["pos"])
    np.testing.assert_allclose(out["np_axes"], x.sum(axis=(0, 2)), rtol=1e-5)
    np.testing.assert_allclose(out["one_axis"], x.sum(axis=1), rtol=1e-5)
    np.testing.assert_array_equal(out["float_int"], x.argmax(axis=2))
    ir = plexus.Ir()
    with ir.main_graph:
        t = plexus.constant(x)
        with pytest.raises(plexus.InvalidArgument, match="'axis' takes int"):
            ops.argmax(t, axis=1.5)
        with pytest.raises(plexus.InvalidArgument, match="at most 1 inputs"):
            ops.relu(t, 1)


def test_tensor_ops_match_numpy():
    """gather, batch_matmul, concat, split, slice, where and dropout through the catalog."""
    table, idx = _randn(5, 3), np.array([[4, 0], [4, 2]], np.int32)
    a, b, w = _randn(2, 3, 4), _randn(4, 5), _randn(2, 3, 5)
    x, y = _randn(2, 3), _randn(2, 1)
    mask = np.tril(np.ones((3, 3), np.uint8))
    scores = _randn(2, 3, 3)

    def build():
        tt, ta = plexus.variable(table, name="table"), plexus.variable(a, name="a")
        g = ops.gather(tt, plexus.constant(idx))
        bm = ops.batch_matmul(ta, plexus.constant(b))
        loss = ops.reduce_sum(ops.add(ops.reduce_sum(ops.mul(bm, plexus.constant(w))), ops.reduce_sum(g)))
        dtable, da = plexus.autodiff(loss, [tt, ta])
        c = ops.concat(plexus.constant(x), plexus.constant(y), axis=1)
        p0, p1 = ops.split(c, [1, 3], axis=1)
        masked = ops.where(plexus.constant(mask), plexus.constant(scores), plexus.constant(np.float32(-1e9)))
        return dict(g=g, bm=bm, dtable=dtable, da=da, c=c, p0=p0, p1=p1, s=ops.slice(c, [-3], [100], [1]),
                    masked=masked, dropout=ops.dropout(plexus.constant(x), p=0.5))

    out = _evaluate(build)
    np.testing.assert_array_equal(out["g"], table[idx])
    np.testing.assert_allclose(out["bm"], a @ b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["da"], w @ b.T, rtol=1e-5, atol=1e-6)
    dtable = np.zeros_like(table)
    np.add.at(dtable, idx.reshape(-1), 1.0)  # rows hit twice accumulate
    np.testing.assert_allclose(out["dtable"], dtable)
    cat = np.concatenate([x, y], axis=1)
    np.testing.assert_array_equal(out["c"], cat)
    np.testing.assert_array_equal(out["p0"], cat[:, :1])
    np.testing.assert_array_equal(out["p1"], cat[:, 1:])
    np.testing.assert_array_equal(out["s"], cat[:, -3:100])
    np.testing.assert_array_equal(out["masked"], np.where(mask, scores, np.float32(-1e9)))
    # A training program (autodiff ran): dropout zeroes some elements, scales the rest by 2.
    kept = out["dropout"] != 0
    np.testing.assert_allclose(out["dropout"][kept], 2 * x[kept], rtol=1e-6)


def test_collectives_take_popxls_positional_orders_and_reduction_names():
    # PopXL: replicated_all_reduce(t, op, group), replicated_all_gather(t, axis, group,
    # output_shape), replicated_reduce_scatter(t, op, group); "add" is PopXL's sum. A
    # positional op was once taken as a group size.
    R = 4

    def build(ir, v):
        pairs = ir.replica_grouping(1, 2)  # PopXL's (stride, group_size): {0, 1}, {2, 3}
        with pytest.raises(plexus.InvalidArgument, match="op 'mul' is not one of"):
            ops.collectives.replicated_all_reduce(v, "mul")
        with pytest.raises(plexus.InvalidArgument, match="axis 1: Plexus gathers along axis 0 only"):
            ops.collectives.replicated_all_gather(v, 1)
        return dict(
            mean=ops.collectives.replicated_all_reduce(v, "mean"),
            add=ops.collectives.replicated_all_reduce(v, "add"),
            pair_max=ops.collectives.replicated_all_reduce(v, "max", pairs),
            pair_gather=ops.collectives.replicated_all_gather(v, 0, pairs, "new_axis"),
            scatter_mean=ops.collectives.replicated_reduce_scatter(v, "mean"))

    base, out = _run_collectives(build, R)
    for r in range(R):
        pair = base[r // 2 * 2:r // 2 * 2 + 2]
        np.testing.assert_allclose(out["mean"][r], base.mean(axis=0), rtol=1e-6)
        np.testing.assert_allclose(out["add"][r], base.sum(axis=0), rtol=1e-6)
        np.testing.assert_array_equal(out["pair_max"][r], pair.max(axis=0))
        np.testing.assert_array_equal(out["pair_gather"][r], pair)
        np.testing.assert_allclose(out["scatter_mean"][r], base.mean(axis=0)[r:r + 1], rtol=1e-6)


def test_matmul_follows_numpys_rank_rules():
    rng = np.random.default_rng(11)
    arrays = {"m": rng.normal(size=(3, 4)), "v": rng.normal(size=4), "w": rng.normal(size=3),
              "b": rng.normal(size=(2, 3, 4)), "n": rng.normal(size=(4, 5))}
    cases = [("m", "v"), ("w", "m"), ("v", "v"), ("b", "n"), ("b", "v"), ("m", "n")]
    ir = plexus.Ir()
    with ir.main_graph:
        t = {k: plexus.variable(a.astype(np.float32), name=k) for k, a in arrays.items()}
        outs = [plexus.d2h_stream(t[a] @ t[b]) for a, b in cases]
        with pytest.raises(plexus.ShapeMismatch):
            ops.matmul(t["v"], t["m"])
        with pytest.raises(plexus.InvalidArgument, match="rank >= 1"):
            ops.matmul(plexus.constant(np.float32(2)), t["v"])
    with plexus.Session(ir) as session:
        got = session.run()
    for (a, b), out in zip(cases, outs):
        want = arrays[a] @ arrays[b]
        assert got[out].shape == want.shape, (a, b)
        np.testing.assert_allclose(got[out], want, rtol=1e-5, atol=1e-6)
