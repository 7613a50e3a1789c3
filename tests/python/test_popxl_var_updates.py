"""popxl.ops.var_updates (bindings/python/popxl/ops/var_updates.py) and the in-place
activations ops.relu_ / ops.gelu_: each op's numbers against a numpy formula written
here, the in-place effect read back from the session, factors given as floats and as
Tensors, time_step incremented, and the errors for bad arguments."""
import numpy as np
import pytest

import plexus
import popxl
import popxl.ops as ops
from popxl.ops import var_updates as vu

RTOL = 1e-6
RNG = np.random.default_rng(11)
T0 = RNG.normal(size=(2, 3)).astype(np.float32)
X0 = RNG.normal(size=(2, 3)).astype(np.float32)


def _run(build, runs=1):
    """Builds a program with build() in the main graph (in sequence); build returns
    {key: tensor} to store to the host. Runs it `runs` times; returns (session, {key:
    array of the last run})."""
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence():
        tensors = build()
        streams = {}
        for key, t in tensors.items():
            streams[key] = popxl.d2h_stream(t.shape, t.dtype, name=key)
            ops.host_store(streams[key], t)
    with popxl.Session(ir, "ipu_model") as session:
        for _ in range(runs):
            out = session.run()
    return session, {key: out[stream] for key, stream in streams.items()}


def _factor(value, as_tensor):
    """`value` as a float, or a float32 scalar variable (read at run time)."""
    return popxl.variable(np.float32(value)) if as_tensor else value


def _f32(x):
    return np.float64(np.float32(x))


# --- the accumulate family -------------------------------------------------------------

ACCUMULATORS = {
    "accumulate_square_": (vu.accumulate_square_, lambda t, x, f: t + f * x * x),
    "accumulate_moving_average_": (vu.accumulate_moving_average_, lambda t, x, f: f * t + (1 - f) * x),
    "accumulate_moving_average_square_": (vu.accumulate_moving_average_square_,
                                          lambda t, x, f: f * t + (1 - f) * x * x),
    "accumulate_mean_": (vu.accumulate_mean_, lambda t, x, s: s / (s + 1) * t + x / (s + 1)),
}


@pytest.mark.parametrize("as_tensor", [False, True], ids=["float", "tensor"])
@pytest.mark.parametrize("name", sorted(ACCUMULATORS))
def test_accumulators_update_in_place_as_numpy(name, as_tensor):
    op, formula = ACCUMULATORS[name]
    f = 0.3 if name != "accumulate_mean_" else 3.0

    def build():
        t = popxl.variable(T0, name="t")
        returned = op(t, popxl.constant(X0), _factor(f, as_tensor))
        build.t = t
        return {"returned": returned}

    session, out = _run(build)
    want = formula(T0.astype(np.float64), X0.astype(np.float64), _f32(f))
    np.testing.assert_allclose(session.get_tensor_data(build.t), want, rtol=RTOL, atol=1e-7)
    np.testing.assert_array_equal(out["returned"], session.get_tensor_data(build.t))  # t itself, updated


def test_accumulate_square_default_factor_is_one_and_accumulates_each_run():
    def build():
        build.t = popxl.variable(T0)
        vu.accumulate_square_(build.t, popxl.constant(X0))
        return {}

    session, _ = _run(build, runs=2)
    np.testing.assert_allclose(session.get_tensor_data(build.t), T0 + 2 * X0.astype(np.float64) ** 2, rtol=RTOL)


def test_accumulate_mean_keeps_the_running_mean():
    values = [np.float32(v) for v in (1.0, 2.0, 6.0)]

    def build():
        build.t = popxl.variable(np.float32(0))
        for step, v in enumerate(values):
            vu.accumulate_mean_(build.t, popxl.constant(v), float(step))
        return {}

    session, _ = _run(build)
    np.testing.assert_allclose(session.get_tensor_data(build.t), np.mean(values), rtol=RTOL)


def test_accumulate_takes_a_one_element_tensor_factor():
    def build():
        build.t = popxl.variable(T0)
        vu.accumulate_(build.t, popxl.constant(X0), popxl.variable(np.array([-2], np.float32)))
        return {}

    session, _ = _run(build)
    np.testing.assert_allclose(session.get_tensor_data(build.t), T0 - 2 * X0.astype(np.float64), rtol=RTOL)


def test_accumulator_scale_and_zero():
    t_nan = np.array([np.nan, np.inf, 2.0], np.float32)

    def build():
        build.scaled = popxl.variable(T0)
        build.by_tensor = popxl.variable(T0)
        build.zeroed = popxl.variable(t_nan)
        build.zero_factor = popxl.variable(t_nan)
        vu.accumulator_scale_(build.scaled, 0.25)
        vu.accumulator_scale_(build.by_tensor, popxl.variable(np.float32(-3)))
        returned = vu.accumulator_zero_(build.zeroed)
        vu.accumulator_scale_(build.zero_factor, popxl.variable(np.float32(0)))
        return {"returned": returned}

    session, out = _run(build)
    np.testing.assert_allclose(session.get_tensor_data(build.scaled), T0 * 0.25, rtol=RTOL)
    np.testing.assert_allclose(session.get_tensor_data(build.by_tensor), T0 * -3.0, rtol=RTOL)
    np.testing.assert_array_equal(session.get_tensor_data(build.zeroed), [0, 0, 0])  # a float 0 zeroes
    np.testing.assert_array_equal(out["returned"], [0, 0, 0])
    # A Tensor factor multiplies: NaN * 0 and inf * 0 stay NaN.
    np.testing.assert_array_equal(session.get_tensor_data(build.zero_factor), [np.nan, np.nan, 0])


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("as_tensor", [False, True], ids=["float", "tensor"])
def test_sparse_accumulate_scatters_rows_along_axis(axis, as_tensor):
    t0 = RNG.normal(size=(4, 5)).astype(np.float32)
    indices = np.array([[1, 3], [1, 0]], np.int32)  # row 1 twice
    a = axis % t0.ndim
    x0 = RNG.normal(size=t0.shape[:a] + indices.shape + t0.shape[a + 1:]).astype(np.float32)

    def build():
        build.t = popxl.variable(t0)
        returned = vu.sparse_accumulate_(build.t, popxl.constant(x0), popxl.constant(indices), axis,
                                         _factor(0.5, as_tensor), W=build.t)
        return {"returned": returned}

    session, out = _run(build)
    want = t0.astype(np.float64)
    view = np.moveaxis(want, a, 0)  # writes go through to want
    updates = np.moveaxis(x0.astype(np.float64), [a, a + 1], [0, 1])
    np.add.at(view, indices, 0.5 * updates)
    np.testing.assert_allclose(session.get_tensor_data(build.t), want, rtol=RTOL)
    np.testing.assert_array_equal(out["returned"], session.get_tensor_data(build.t))


# --- Adam, LAMB, AdaMax ----------------------------------------------------------------

M0 = RNG.normal(size=(3, 2)).astype(np.float32)
V0 = RNG.uniform(0.1, 1.0, size=(3, 2)).astype(np.float32)
W0 = RNG.normal(size=(3, 2)).astype(np.float32)


def _adam_reference(step, beta1, beta2, eps, wd, root=True):
    m, v = M0.astype(np.float64), V0.astype(np.float64)
    if step is not None:
        m = m / (1 - _f32(beta1) ** step)
        if beta2 is not None:
            v = v / (1 - _f32(beta2) ** step)
    return m / ((np.sqrt(v) if root else v) + _f32(eps)) + _f32(wd) * W0


@pytest.mark.parametrize("name", ["adam_updater", "lamb_updater"])
@pytest.mark.parametrize("as_tensor", [False, True], ids=["float", "tensor"])
@pytest.mark.parametrize("step_dtype", [np.float32, np.int32])
def test_adam_updater_corrects_the_bias_and_increments_time_step(name, as_tensor, step_dtype):
    b1, b2, eps, wd = 0.5, 0.75, 1e-3, 0.125

    def build():
        build.step = popxl.variable(np.array(2, step_dtype), name="step")
        m, v, w = popxl.variable(M0), popxl.variable(V0), popxl.variable(W0)
        x = getattr(vu, name)(m, v, w, build.step, *(_factor(a, as_tensor) for a in (wd, b1, b2, eps)))
        return {"x": x}

    session, out = _run(build, runs=2)
    assert session.get_tensor_data(build.step) == 4  # + 1 per run, before use
    np.testing.assert_allclose(out["x"], _adam_reference(4, b1, b2, eps, wd), rtol=RTOL)


def test_adam_updater_with_popxls_usual_betas():
    # 1 - 0.999 ** t loses digits in float32 (as on the IPU): a looser tolerance.
    def build():
        build.step = popxl.variable(np.float32(0))
        return {"x": vu.adam_updater(popxl.variable(M0), popxl.variable(V0), time_step=build.step, beta1=0.9,
                                     beta2=0.999)}

    session, out = _run(build)
    np.testing.assert_allclose(out["x"], _adam_reference(1, 0.9, 0.999, 1e-7, 0.0), rtol=1e-4)
    assert session.get_tensor_data(build.step) == 1


def test_adam_updater_without_time_step_has_no_correction_and_no_weight_decay():
    def build():
        m, v = popxl.variable(M0), popxl.variable(V0)
        # Betas without time_step are ignored; a zero weight decay needs no weight.
        return {"x": vu.adam_updater(m, v, beta1=0.9, beta2=0.99, weight_decay=0.0, epsilon=0.5),
                "m": m}

    _, out = _run(build)
    np.testing.assert_allclose(out["x"], _adam_reference(None, 0, 0, 0.5, 0.0), rtol=RTOL)
    np.testing.assert_array_equal(out["m"], M0)  # the moments are read, not written


def test_adamax_updater():
    def build():
        build.step = popxl.variable(np.int32(0))
        m, v, w = popxl.variable(M0), popxl.variable(V0), popxl.variable(W0)
        return {"x": vu.adamax_updater(m, v, w, build.step, popxl.variable(np.float32(0.25)), 0.5, 0.01)}

    session, out = _run(build)
    np.testing.assert_allclose(out["x"], _adam_reference(1, 0.5, None, 0.01, 0.25, root=False), rtol=RTOL)
    assert session.get_tensor_data(build.step) == 1


def test_lamb_square_is_the_sum_of_squares():
    _, out = _run(lambda: {"r": ops.lamb_square(popxl.constant(T0)), "same": vu.lamb_square(popxl.constant(X0))})
    assert out["r"].shape == ()
    np.testing.assert_allclose(out["r"], np.sum(T0.astype(np.float64) ** 2), rtol=RTOL)
    np.testing.assert_allclose(out["same"], np.sum(X0.astype(np.float64) ** 2), rtol=RTOL)


def _lamb_step(lr, mwn, r1_sq, r2_sq):
    r1, r2 = np.sqrt(_f32(r1_sq)), np.sqrt(_f32(r2_sq))
    ratio = 1.0 if 0 in (r1, r2, mwn) else min(r1, _f32(mwn)) / r2
    return W0 - _f32(lr) * ratio * M0.astype(np.float64)


@pytest.mark.parametrize("as_tensor", [False, True], ids=["float", "tensor"])
@pytest.mark.parametrize("mwn", [None, 0.0, 0.5, 100.0], ids=["none", "zero", "clipped", "unclipped"])
def test_adam_var_update_applies_lambs_trust_ratio(as_tensor, mwn):
    lr = 0.25
    r1_sq, r2_sq = float(np.sum(W0.astype(np.float64) ** 2)), float(np.sum(M0.astype(np.float64) ** 2))

    def build():
        build.w = popxl.variable(W0)
        x = popxl.variable(M0)
        r1, r2 = ops.lamb_square(build.w), ops.lamb_square(x)
        bound = mwn if mwn is None else _factor(mwn, as_tensor)
        return {"returned": vu.adam_var_update(build.w, x, r1, r2, _factor(lr, as_tensor), bound)}

    session, out = _run(build)
    want = _lamb_step(lr, mwn or 0.0, np.float32(r1_sq), np.float32(r2_sq))
    np.testing.assert_allclose(session.get_tensor_data(build.w), want, rtol=RTOL, atol=1e-7)
    np.testing.assert_array_equal(out["returned"], session.get_tensor_data(build.w))


def test_adam_var_update_ratio_is_one_for_a_zero_norm_and_lr_none_is_zero():
    def build():
        build.w, build.kept = popxl.variable(W0), popxl.variable(W0)
        x = popxl.variable(M0)
        zero = popxl.constant(np.array([0], np.float32))
        vu.adam_var_update(build.w, x, zero, popxl.constant(np.float32(9)), 0.5, 1.0)
        vu.adam_var_update(build.kept, x, 4.0, 9.0)
        return {}

    session, _ = _run(build)
    np.testing.assert_allclose(session.get_tensor_data(build.w), W0 - 0.5 * M0.astype(np.float64), rtol=RTOL)
    np.testing.assert_array_equal(session.get_tensor_data(build.kept), W0)


# --- in-place activations --------------------------------------------------------------

def _gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


@pytest.mark.parametrize("name, formula", [("relu_", lambda x: np.maximum(x, 0)), ("gelu_", _gelu)])
def test_inplace_activations_write_their_input(name, formula):
    def build():
        build.t = popxl.variable(T0)
        returned = getattr(ops, name)(build.t)
        intermediate = getattr(ops, name)(popxl.constant(X0) * 2.0)
        return {"returned": returned, "read_after": build.t + 0.0, "intermediate": intermediate}

    session, out = _run(build)
    want = formula(T0.astype(np.float64))
    # atol: float32 gelu deep in its negative tail (its value ~1e-4) keeps ~1e-7 absolutely.
    np.testing.assert_allclose(session.get_tensor_data(build.t), want, rtol=RTOL, atol=1e-6)
    np.testing.assert_array_equal(out["returned"], session.get_tensor_data(build.t))
    np.testing.assert_array_equal(out["read_after"], out["returned"])
    np.testing.assert_allclose(out["intermediate"], formula(2.0 * X0.astype(np.float64)), rtol=RTOL, atol=1e-6)
    assert name in ops.__all__


# --- errors ----------------------------------------------------------------------------

def _raises(error, argument, call):
    """call() raises `error` with a message naming `argument`."""
    ir = popxl.Ir()
    with ir.main_graph:
        with pytest.raises(error) as info:
            call()
    assert argument in str(info.value), str(info.value)


def _f32v(shape=(2, 3)):
    return popxl.variable(np.zeros(shape, np.float32))


@pytest.mark.parametrize("name", sorted(ACCUMULATORS))
def test_accumulators_refuse_bad_shapes_dtypes_and_factors(name):
    op = ACCUMULATORS[name][0]
    _raises(plexus.ShapeMismatch, "X", lambda: op(_f32v(), _f32v((3, 2)), 0.5))
    _raises(plexus.DTypeMismatch, "X", lambda: op(_f32v(), popxl.variable(np.zeros((2, 3), np.int32)), 0.5))
    _raises(plexus.DTypeMismatch, "t", lambda: op(popxl.variable(np.zeros((2, 3), np.int32)), _f32v(), 0.5))
    _raises(plexus.ShapeMismatch, "step" if name == "accumulate_mean_" else "f",
            lambda: op(_f32v(), _f32v(), _f32v((2,))))
    _raises(plexus.DTypeMismatch, "step" if name == "accumulate_mean_" else "f",
            lambda: op(_f32v(), _f32v(), popxl.variable(np.int32(1))))
    _raises(TypeError, "step" if name == "accumulate_mean_" else "f", lambda: op(_f32v(), _f32v(), "0.5"))
    _raises(plexus.InvalidArgument, "constant", lambda: op(popxl.constant(np.zeros((2, 3), np.float32)), _f32v(), 0.5))


def test_sparse_accumulate_refuses_bad_arguments():
    idx = np.array([0, 1], np.int32)
    _raises(plexus.ShapeMismatch, "X", lambda: vu.sparse_accumulate_(_f32v(), _f32v((3, 3)), popxl.constant(idx)))
    _raises(plexus.DTypeMismatch, "indices",
            lambda: vu.sparse_accumulate_(_f32v(), _f32v(), popxl.constant(idx.astype(np.float32))))
    _raises(plexus.InvalidArgument, "axis", lambda: vu.sparse_accumulate_(_f32v(), _f32v(), popxl.constant(idx), 2))


def test_sparse_accumulate_index_out_of_range_is_a_run_error():
    ir = popxl.Ir()
    with ir.main_graph:
        vu.sparse_accumulate_(_f32v(), _f32v(), popxl.constant(np.array([0, 7], np.int32)))
    with pytest.raises(plexus.RunError), popxl.Session(ir) as session:
        session.run()


def test_updaters_refuse_bad_arguments():
    def mv():
        return _f32v(), _f32v()

    for name in ("adam_updater", "lamb_updater"):
        op = getattr(vu, name)
        _raises(ValueError, "weight", lambda: op(*mv(), weight_decay=0.1))
        _raises(ValueError, "weight", lambda: op(*mv(), weight_decay=popxl.variable(np.float32(0))))
        _raises(ValueError, "beta2", lambda: op(*mv(), time_step=popxl.variable(np.float32(0)), beta1=0.9))
        _raises(plexus.ShapeMismatch, "acc_second_order", lambda: op(_f32v(), _f32v((3, 2))))
        _raises(plexus.ShapeMismatch, "weight", lambda: op(*mv(), _f32v((3,)), weight_decay=0.1))
        _raises(plexus.ShapeMismatch, "time_step", lambda: op(*mv(), time_step=_f32v((2,)), beta1=0.9, beta2=0.9))
        _raises(plexus.DTypeMismatch, "time_step",
                lambda: op(*mv(), time_step=popxl.variable(np.uint8(0)), beta1=0.9, beta2=0.9))
        _raises(plexus.DTypeMismatch, "epsilon", lambda: op(*mv(), epsilon=popxl.variable(np.int32(0))))
    _raises(ValueError, "time_step", lambda: vu.adamax_updater(*mv()))
    _raises(ValueError, "weight", lambda: vu.adamax_updater(*mv(), time_step=_f32v(()), weight_decay=1.0))


def test_adam_var_update_and_lamb_square_refuse_bad_arguments():
    _raises(plexus.ShapeMismatch, "x", lambda: vu.adam_var_update(_f32v(), _f32v((3,)), 1.0, 1.0))
    _raises(plexus.ShapeMismatch, "r1", lambda: vu.adam_var_update(_f32v(), _f32v(), _f32v((2,)), 1.0))
    _raises(plexus.DTypeMismatch, "learning_rate",
            lambda: vu.adam_var_update(_f32v(), _f32v(), 1.0, 1.0, popxl.variable(np.int32(1))))
    _raises(TypeError, "max_weight_norm", lambda: vu.adam_var_update(_f32v(), _f32v(), 1.0, 1.0, 0.1, "big"))
    _raises(plexus.DTypeMismatch, "t", lambda: ops.lamb_square(popxl.variable(np.zeros(3, np.int32))))


def test_inplace_activations_refuse_ints_and_constants():
    for op in (ops.relu_, ops.gelu_):
        _raises(plexus.DTypeMismatch, "float32", lambda: op(popxl.variable(np.zeros(2, np.int32))))
        _raises(plexus.InvalidArgument, "constant", lambda: op(popxl.constant(np.zeros(2, np.float32))))
