"""Pipelines from Python: Tensor.shift against NumPy (np.roll for wrap, slicing for zero, clamped
indices for clamp), and `scellis.pipeline` traced once into a repeated graph — Jacobi and heat
against float64 NumPy loops on the CPU reference and on WebGPU (SwiftShader), the loop rolled up
into one body, the fused encoder's one submission, the pinned generic executor, the tracing
errors and the re-trace rules."""
import json

import numpy as np
import pytest

import scellis
from scellis import _scellis
from conftest import f32

ROWS, COLS, SWEEPS = 33, 29, 40
ALPHA = 0.2


# ---- NumPy oracles ----

def shift_zero(a, shifts):
    out = np.zeros_like(a)
    dst, src = [], []
    for s, n in zip(shifts, a.shape):
        if abs(s) >= n:
            return out
        dst.append(slice(s, None) if s >= 0 else slice(0, n + s))
        src.append(slice(0, n - s) if s >= 0 else slice(-s, None))
    out[tuple(dst)] = a[tuple(src)]
    return out


def shift_clamp(a, shifts):
    index = [np.clip(np.arange(n) - s, 0, n - 1) for s, n in zip(shifts, a.shape)]
    return a[np.ix_(*index)]


def jacobi_f64(u, q, sweeps):
    u, q = u.astype(np.float64), q.astype(np.float64)
    for _ in range(sweeps):
        p = np.pad(u, 1)
        u = (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] + q) / 4
    return u


def heat_f64(u, steps, alpha=ALPHA):
    u = u.astype(np.float64)
    for _ in range(steps):
        p = np.pad(u, 1)
        u = u + alpha * (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4 * u)
    return u


# ---- the pipelines under test ----

def neighbours(u, boundary="zero"):
    return (u.shift([1, 0], boundary) + u.shift([-1, 0], boundary) + u.shift([0, 1], boundary)
            + u.shift([0, -1], boundary))


def sweep(u, q):
    return (neighbours(u) + q) * 0.25


def make_jacobi(**options):
    @scellis.pipeline(tier="prod", **options)
    def jacobi(u, q):
        for _ in range(SWEEPS):
            u = sweep(u, q)
        return u
    return jacobi


def make_heat(**options):
    @scellis.pipeline(tier="prod", **options)
    def heat(u, steps, alpha):
        return scellis.loop(steps, lambda u: u + (neighbours(u) - u * 4.0) * alpha, u)
    return heat


def kernels(text):
    return len(json.loads(_scellis.lower(text, "execplan", "prod", True))["steps"])


# ---- shift ----

@pytest.mark.parametrize("shifts", [(1, 0), (-2, 3), (0, -1), (5, -4), (7, 2)])
def test_shift_matches_numpy(backend, rng, shifts):
    a = f32(rng, 6, 5)
    g = scellis.Graph()
    t = g.input("a", a)
    outs = {"zero": t.shift(shifts), "wrap": t.shift(shifts, "wrap"),
            "clamp": t.shift(shifts, boundary="clamp"), "roll": t.roll(shifts[1], dims=1)}
    assert g.lowest_version(**outs) == 5
    assert json.loads(g.to_json(**outs))["version"] == 5
    r = g.run(tier="prod", **backend, **outs)
    assert r.backend == backend["backend"]
    np.testing.assert_array_equal(r["zero"], shift_zero(a, shifts))
    np.testing.assert_array_equal(r["wrap"], np.roll(a, shifts, axis=(0, 1)))
    np.testing.assert_array_equal(r["clamp"], shift_clamp(a, shifts))
    np.testing.assert_array_equal(r["roll"], np.roll(a, shifts[1], axis=1))


def test_a_stencil_of_shifts_is_one_kernel(rng):
    g = scellis.Graph()
    u = g.input("u", f32(rng, 8, 8))
    assert kernels(g.to_json(out=sweep(u, u))) == 1


# ---- pipelines: results ----

def test_jacobi_rolls_up_into_one_repeated_body(backend, rng):
    u0, q = f32(rng, ROWS, COLS, low=-1, high=1), f32(rng, ROWS, COLS, low=-1, high=1)
    jacobi = make_jacobi(**backend)
    traced = jacobi.trace(u0, q)
    assert traced.repeat == SWEEPS
    doc = traced.doc
    assert doc["version"] == 5 and doc["repeat"] == SWEEPS
    # One copy of the body: four shifts, not 4 x 40.
    assert sum(n["op"] == "shift" for n in doc["nodes"]) == 4
    assert [(n["name"], n["carry"]) for n in doc["nodes"] if "carry" in n] == [("u", "out")]
    r = jacobi.run(u0, q)
    assert r.backend == backend["backend"] and r.fallback_reason is None
    np.testing.assert_allclose(r["out"], jacobi_f64(u0, q, SWEEPS), atol=1e-5, rtol=0)
    np.testing.assert_allclose(jacobi(u0, q), jacobi_f64(u0, q, SWEEPS), atol=1e-5, rtol=0)


def test_heat_with_an_explicit_loop(backend, rng):
    u0 = f32(rng, ROWS, COLS, low=0, high=1)
    heat = make_heat(**backend)
    got = heat(u0, SWEEPS, ALPHA)
    assert heat.trace(u0, SWEEPS, ALPHA).repeat == SWEEPS
    np.testing.assert_allclose(got, heat_f64(u0, SWEEPS), atol=1e-5, rtol=0)
    # The unrolled for loop gives the same document shape and the same values.
    @scellis.pipeline(tier="prod", **backend)
    def heat_for(u):
        for _ in range(SWEEPS):
            u = u + (neighbours(u) - u * 4.0) * ALPHA
        return u
    assert heat_for.trace(u0).repeat == SWEEPS
    np.testing.assert_array_equal(heat_for(u0), got)


def test_state_read_as_a_constant_too_and_nodes_around_the_loop(backend, rng):
    """Two pieces of state, the starting value read again inside the loop, a loop-invariant
    value computed before the loop and results computed after it."""
    u0, v0 = f32(rng, 9, 7, low=-1, high=1), f32(rng, 9, 7, low=-1, high=1)
    n = 12

    @scellis.pipeline(tier="prod", **backend)
    def coupled(u, v):
        half = u * 0.5  # from the starting u, invariant
        start = u
        for _ in range(n):
            u, v = u + v.shift([0, 1], "wrap") * 0.25 - half * 0.125, v * 0.5 + start * 0.25
        return {"u": u * 2.0, "v": v, "total": u + v}

    u, v = u0.astype(np.float64), v0.astype(np.float64)
    half, start = u * 0.5, u
    for _ in range(n):
        u, v = u + np.roll(v, 1, axis=1) * 0.25 - half * 0.125, v * 0.5 + start * 0.25
    traced = coupled.trace(u0, v0)
    assert traced.repeat == n
    assert sorted(traced.state) == ["u.state", "v"]
    got = coupled(u0, v0)
    assert sorted(got) == ["total", "u", "v"]
    np.testing.assert_allclose(got["u"], u * 2, atol=1e-5, rtol=0)
    np.testing.assert_allclose(got["v"], v, atol=1e-5, rtol=0)
    np.testing.assert_allclose(got["total"], u + v, atol=1e-5, rtol=0)


def test_a_pipeline_without_a_loop_runs_once(rng):
    a = f32(rng, 4, 5)

    @scellis.pipeline(backend="cpu", tier="prod")
    def once(x):
        return x.shift([1, 1], "wrap") * 3.0

    assert once.trace(a).repeat == 1 and "repeat" not in once.trace(a).doc
    np.testing.assert_array_equal(once(a), (np.roll(a, (1, 1), axis=(0, 1)).astype(np.float64)
                                            * 3).astype(np.float32))


# ---- where it ran ----

def test_a_fusable_pipeline_runs_fused_in_one_submission_on_swiftshader(rng):
    u0, q = f32(rng, ROWS, COLS, low=-1, high=1), f32(rng, ROWS, COLS, low=-1, high=1)
    jacobi = make_jacobi(backend="webgpu", allow_software_adapter=True)
    per_sweep = kernels(jacobi.trace(u0, q).text)
    for _ in range(2):  # the prepared session too, on its second call
        r = jacobi.run(u0, q)
        assert (r.backend, r.executor, r.fallback_reason) == ("webgpu", "fused-encoder", None)
        assert r.stats["submissions"] == 1
        # One stencil kernel per sweep, temporally blocked: 8 sweeps per dispatch.
        assert per_sweep == 1 and r.stats["iterations_per_dispatch"] == 8
        assert r.stats["dispatches"] == SWEEPS // 8
    generic = make_jacobi(backend="webgpu", allow_software_adapter=True, executor="generic")
    g = generic.run(u0, q)
    assert g.executor == "generic" and "pinned" in g.fallback_reason
    assert g.stats["submissions"] == SWEEPS // 8
    np.testing.assert_array_equal(g["out"], r["out"])
    pinned = make_jacobi(backend="webgpu", allow_software_adapter=True, executor="fused-encoder")
    p = pinned.run(u0, q)
    assert (p.executor, p.fallback_reason, p.stats["submissions"]) == ("fused-encoder", None, 1)
    np.testing.assert_array_equal(p["out"], r["out"])


def test_graph_run_takes_the_executor_pin(rng):
    g = scellis.Graph()
    u = g.input("u", f32(rng, 5, 5))
    r = g.run(backend="webgpu", allow_software_adapter=True, tier="prod", executor="generic",
              out=sweep(u, u))
    assert r.executor == "generic" and "pinned" in r.fallback_reason
    with pytest.raises(scellis.GraphError) as e:
        g.run(backend="cpu", tier="prod", executor="generic", out=sweep(u, u))
    assert e.value.code == "executor-unavailable"


# ---- re-tracing and results ----

def test_traced_once_per_signature_and_results_stay_valid(rng):
    heat = make_heat(backend="cpu")
    a, b = f32(rng, 6, 5, low=0, high=1), f32(rng, 6, 5, low=0, high=1)
    first = heat(a, 5, ALPHA)
    kept = first.copy()
    second = heat(b, 5, ALPHA)  # new values, same signature: no trace
    assert heat.traces == 1
    np.testing.assert_array_equal(first, kept)  # the earlier result is untouched
    assert not np.shares_memory(first, second)
    np.testing.assert_allclose(second, heat_f64(b, 5), atol=1e-5, rtol=0)
    heat(f32(rng, 7, 5, low=0, high=1), 5, ALPHA)  # a new shape
    assert heat.traces == 2
    heat(a, 6, ALPHA)  # a new constant: the loop count
    heat(a, 5, 0.1)    # a new constant: alpha
    assert heat.traces == 4
    np.testing.assert_allclose(heat(a, 5, 0.1), heat_f64(a, 5, 0.1), atol=1e-5, rtol=0)
    np.testing.assert_array_equal(heat(a, 5, ALPHA), first)  # cached: no trace, same bits
    assert heat.traces == 4


# ---- tracing errors ----

def expect_trace_error(code, fn, *args):
    with pytest.raises(scellis.TraceError) as e:
        fn(*args)
    assert isinstance(e.value, scellis.GraphError)
    assert e.value.code == code
    return e.value


def test_reading_a_value_inside_the_trace_is_refused(rng):
    a = f32(rng, 3, 3)

    @scellis.pipeline(backend="cpu")
    def reads_float(x):
        return x * float(x.sum())

    @scellis.pipeline(backend="cpu")
    def reads_numpy(x):
        return x * x.numpy()

    @scellis.pipeline(backend="cpu")
    def branches(x):
        if x.sum().gt(0):
            return x
        return -x

    @scellis.pipeline(backend="cpu")
    def data_count(x):
        for _ in range(x.sum()):
            x = x * 2.0
        return x

    expect_trace_error("value-read-in-trace", reads_float, a)
    expect_trace_error("value-read-in-trace", reads_numpy, a)
    expect_trace_error("data-dependent-control-flow", branches, a)
    expect_trace_error("loop-count-not-static", data_count, a)


def test_a_loop_count_must_be_a_static_int(rng):
    a = f32(rng, 3, 3)
    for count in (3.0, np.float32(3), True, "3"):
        @scellis.pipeline(backend="cpu")
        def counted(x):
            return scellis.loop(count, lambda x: x * 2.0, x)
        expect_trace_error("loop-count-not-static", counted, a)


def test_a_handle_from_an_earlier_trace_is_stale(rng):
    a = f32(rng, 3, 3)
    kept = []

    @scellis.pipeline(backend="cpu")
    def keeps(x):
        kept.append(x * 2.0)
        return kept[0] + kept[-1]

    keeps.trace(a)
    expect_trace_error("stale-handle", lambda: kept[0] * 3.0)
    expect_trace_error("stale-handle", keeps, a[:2])  # the re-trace reads the first one's tensor


def test_a_middle_value_read_after_the_loop_shortens_the_rolled_loop(rng):
    a = f32(rng, 4, 6)

    @scellis.pipeline(backend="cpu", tier="prod")
    def middles(x):
        seen = []
        for _ in range(6):
            x = x * 0.5 + 1.0
            seen.append(x)
        return x, seen[2]

    # Six copies cannot roll up (a middle one is returned); the longest stretch that can is
    # iterations 1 to 4 as two copies of a two-iteration body (the third iteration's value is
    # inside the last copy), iterations 5 and 6 after it.
    assert middles.trace(a).repeat == 2
    want = a.astype(np.float64)
    seen = []
    for _ in range(6):
        want = want * 0.5 + 1.0
        seen.append(want)
    last, third = middles(a)
    np.testing.assert_allclose(last, want, atol=1e-6, rtol=0)
    np.testing.assert_allclose(third, seen[2], atol=1e-6, rtol=0)


def test_an_explicit_loop_with_work_after_it(rng):
    a = f32(rng, 4, 6)

    @scellis.pipeline(backend="cpu", tier="prod")
    def loop_then_double(x, n):
        y = scellis.loop(n, lambda x: x * 0.5 + 1.0, x)
        return y, y * 2.0

    traced = loop_then_double.trace(a, 7)
    assert traced.repeat == 7 and len(traced.doc["nodes"]) == 4  # state, two body ops, double
    want = a.astype(np.float64)
    for _ in range(7):
        want = want * 0.5 + 1.0
    y, doubled = loop_then_double(a, 7)
    np.testing.assert_allclose(y, want, atol=1e-6, rtol=0)
    np.testing.assert_allclose(doubled, want * 2, atol=1e-6, rtol=0)


def test_a_loop_may_start_from_values_computed_before_it(backend, rng):
    """An accumulator started at zero and a state scaled before the loop: the starting values
    are computed by a prologue on each call, then carried."""
    @scellis.pipeline(tier="prod", **backend)
    def accumulate(x, q):
        x = x * 2.0
        total = q * 0.0
        for _ in range(5):
            x = x * 0.5 + q
            total = total + x
        return x, total

    a, q = f32(rng, 3, 4), f32(rng, 3, 4)
    traced = accumulate.trace(a, q)
    assert traced.repeat == 5 and traced.prologue is not None
    x, q64, total = a.astype(np.float64) * 2, q.astype(np.float64), 0.0
    for _ in range(5):
        x = x * 0.5 + q64
        total = total + x
    for _ in range(2):  # the prologue's session too, on the second call
        got_x, got_total = accumulate(a, q)
        np.testing.assert_allclose(got_x, x, atol=1e-5, rtol=0)
        np.testing.assert_allclose(got_total, total, atol=1e-5, rtol=0)


def test_a_non_finite_result_is_a_result(backend):
    @scellis.pipeline(tier="prod", **backend)
    def overflows(x):
        for _ in range(3):
            x = x * 1e30
        return x

    a = np.array([[1.0, -1.0], [0.0, 1e-30]], np.float32)
    want = np.array([[np.inf, -np.inf], [0.0, np.inf]], np.float32)  # 1e-30 * 1e90 overflows too
    np.testing.assert_array_equal(overflows(a), want)
    # The next calls still run, finite or not.
    np.testing.assert_array_equal(overflows(np.zeros((2, 2), np.float32)), np.zeros((2, 2)))
    np.testing.assert_array_equal(overflows(a), want)
