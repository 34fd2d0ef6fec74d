"""Every Tensor method and Graph source/update against NumPy in float64, with fresh seeded random
inputs, on the CPU reference and on WebGPU (Dawn on SwiftShader). Ops whose result is one
correctly rounded operation (or data movement) must match the float64 value rounded to float32
exactly; the others are held to the engine's default tolerance class (atol 1e-5, rtol 1e-4)."""
import math

import numpy as np
import pytest

import scellis
from conftest import f32

DEFAULT = {"rtol": 1e-4, "atol": 1e-5}
_erf = np.vectorize(math.erf)


def exact(got, want):
    np.testing.assert_array_equal(got, np.asarray(want, np.float64).astype(np.float32))


def close(got, want, **tol):
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, **(tol or DEFAULT))


def run(g, backend, **outputs):
    r = g.run(tier="prod", **backend, **outputs)
    assert r.backend == backend["backend"]
    assert r.fallback_reason is None
    return r.outputs


def test_elementwise(backend, rng):
    x = f32(rng, 3, 5)
    p = f32(rng, 3, 5, low=0.1, high=4.0)
    g = scellis.Graph()
    tx, tp = g.input("x", x), g.input("p", p)
    out = run(g, backend, relu=tx.relu(), gelu=tx.gelu(), sigmoid=tx.sigmoid(), tanh=tx.tanh(),
              exp=tx.exp(), log=tp.log(), sqrt=tp.sqrt(), neg=-tx, positive=tx.positive())
    x64, p64 = x.astype(np.float64), p.astype(np.float64)
    exact(out["relu"], np.maximum(x64, 0))
    exact(out["neg"], -x64)
    exact(out["positive"], (x64 > 0).astype(np.float64))
    close(out["gelu"], x64 * 0.5 * (1 + _erf(x64 / math.sqrt(2))))
    close(out["sigmoid"], 1 / (1 + np.exp(-x64)))
    close(out["tanh"], np.tanh(x64))
    close(out["exp"], np.exp(x64))
    close(out["log"], np.log(p64))
    np.testing.assert_allclose(out["sqrt"], np.sqrt(p64), rtol=3e-7)


def test_broadcasting_arithmetic_and_scalars(backend, rng):
    a, b, c = f32(rng, 2, 3, 4), f32(rng, 3, 4), f32(rng, 4)
    d = f32(rng, 3, 1, low=0.5, high=3.0)
    g = scellis.Graph()
    ta, tb, tc, td = g.input("a", a), g.input("b", b), g.input("c", c), g.input("d", d)
    out = run(g, backend, add=ta + tb, sub=tc - ta, mul=ta * tc, div=tb / td,
              add_s=ta + 2.5, radd_s=2.5 + ta, rsub_s=2.5 - tb, mul_s=ta * -1.5,
              rmul_s=np.float32(0.5) * tc, div_s=tb / 4.0, rdiv_s=3.0 / td, sub_s=tc - 1.25)
    a64, b64, c64, d64 = (v.astype(np.float64) for v in (a, b, c, d))
    exact(out["add"], a64 + b64)
    exact(out["sub"], c64 - a64)
    exact(out["mul"], a64 * c64)
    exact(out["add_s"], a64 + 2.5)
    exact(out["radd_s"], 2.5 + a64)
    exact(out["rsub_s"], 2.5 - b64)
    exact(out["mul_s"], a64 * -1.5)
    exact(out["rmul_s"], 0.5 * c64)
    exact(out["sub_s"], c64 - 1.25)
    # WGSL division is within 2.5 ulp (the `tight` class); the CPU reference rounds correctly.
    for name, want in (("div", b64 / d64), ("div_s", b64 / 4.0), ("rdiv_s", 3.0 / d64)):
        np.testing.assert_allclose(out[name], want, rtol=3e-7, atol=0, err_msg=name)
    assert out["add"].shape == (2, 3, 4) and out["div"].shape == (3, 4)


def test_masks_where_masked_fill_clamp_and_cast(backend, rng):
    """Protocol version 3: comparisons give bool masks (NumPy's bool arrays here), NaN compares
    false except under ne; where/masked_fill select bits; clamp keeps NaN; casts 0/1 and != 0."""
    a = f32(rng, 3, 5)
    b = f32(rng, 5)
    a[0, :2] = b[:2]                     # ties for eq/le/ge
    a[1, 0], a[2, 1] = np.nan, -0.0      # NaN and a signed zero
    g = scellis.Graph()
    ta, tb = g.input("a", a), g.input("b", b)
    mask = ta > tb
    out = run(g, backend, eq=ta.eq(tb), ne=ta.ne(tb), lt=ta < tb, le=ta <= 0.5, gt=mask,
              ge=ta.ge(tb), where=ta.where(mask, tb), where_s=g.where(mask, ta, 0.0),
              fill=ta.masked_fill(ta.lt(0.0), -7.0), clamp=ta.clamp(-0.5, 1.0),
              clamp_lo=ta.clamp(min=0.25), to_f32=mask.cast("f32"), to_bool=ta.cast("bool"))
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(invalid="ignore"):
        want = {"eq": a64 == b64, "ne": a64 != b64, "lt": a64 < b64, "le": a64 <= 0.5,
                "gt": a64 > b64, "ge": a64 >= b64}
        negative = a64 < 0.0
    for name, w in want.items():
        assert out[name].dtype == np.bool_, name
        np.testing.assert_array_equal(out[name], w, err_msg=name)
    exact(out["where"], np.where(want["gt"], a64, np.broadcast_to(b64, a.shape)))
    exact(out["where_s"], np.where(want["gt"], a64, 0.0))
    exact(out["fill"], np.where(negative, -7.0, a64))
    exact(out["clamp"], np.minimum(np.maximum(a64, -0.5), 1.0))   # NaN stays NaN
    exact(out["clamp_lo"], np.maximum(a64, 0.25))
    exact(out["to_f32"], want["gt"].astype(np.float64))
    np.testing.assert_array_equal(out["to_bool"], a64 != 0)       # NaN is true, -0 false
    assert np.signbit(out["where"][2, 1]) == np.signbit(np.where(want["gt"], a, b)[2, 1])


def test_slicing_flip_and_pad_move_bits_exactly(backend, rng):
    """Protocol version 4's strided views against NumPy's own indexing: negative steps, bounds
    past the ends, empty results, integers dropping axes, Ellipsis; flips; constant padding."""
    a = f32(rng, 4, 5, 6)
    g = scellis.Graph()
    t = g.input("a", a)
    keys = {"s1": (slice(1, None), slice(None, None, -2)), "s2": (Ellipsis, 0),
            "s3": (slice(-1, -5, -1), 2, slice(10, 20)), "s4": (slice(3, 1),),
            "s5": (1, Ellipsis, slice(-100, 100, 3))}
    out = run(g, backend, flip=t.flip(0, 2), pad=t.pad([(1, 0), (0, 2), (3, 1)], -1.5),
              **{name: t[k] for name, k in keys.items()})
    for name, k in keys.items():
        np.testing.assert_array_equal(out[name], a[k], err_msg=name)
        assert out[name].shape == a[k].shape, name
    np.testing.assert_array_equal(out["flip"], np.flip(a, (0, 2)))
    np.testing.assert_array_equal(out["pad"], np.pad(a, [(1, 0), (0, 2), (3, 1)],
                                                      constant_values=-1.5))
    with pytest.raises(scellis.GraphError, match="out of range"):
        t[4]
    with pytest.raises(scellis.GraphError, match="zero"):
        t[::0]


def test_matmul_plain_and_batched(backend, rng):
    a, b = f32(rng, 4, 6), f32(rng, 6, 3)
    c, d = f32(rng, 2, 1, 4, 6), f32(rng, 3, 6, 5)
    g = scellis.Graph()
    ta, tb, tc, td = g.input("a", a), g.input("b", b), g.input("c", c), g.input("d", d)
    out = run(g, backend, ab=ta @ tb, cd=tc @ td, cb=tc @ tb)
    f64 = lambda v: v.astype(np.float64)  # noqa: E731
    close(out["ab"], f64(a) @ f64(b))
    close(out["cd"], f64(c) @ f64(d))
    close(out["cb"], f64(c) @ f64(b))
    assert out["cd"].shape == (2, 3, 4, 5) and out["cb"].shape == (2, 1, 4, 3)


def test_reductions(backend, rng):
    x = f32(rng, 3, 4, 5)
    g = scellis.Graph()
    t = g.input("x", x)
    out = run(g, backend, sum_all=t.sum(), sum_1=t.sum(1), sum_last_keep=t.sum(-1, keepdim=True),
              mean_all=t.mean(), mean_0=t.mean(axis=0), mean_2_keep=t.mean(2, keepdim=True))
    x64 = x.astype(np.float64)
    close(out["sum_all"], x64.sum())
    close(out["sum_1"], x64.sum(1))
    close(out["sum_last_keep"], x64.sum(-1, keepdims=True))
    close(out["mean_all"], x64.mean())
    close(out["mean_0"], x64.mean(0))
    close(out["mean_2_keep"], x64.mean(2, keepdims=True))
    assert out["sum_all"].shape == () and out["sum_last_keep"].shape == (3, 4, 1)


def test_layout(backend, rng):
    x, m = f32(rng, 2, 3, 4), f32(rng, 3, 5)
    g = scellis.Graph()
    t, tm = g.input("x", x), g.input("m", m)
    out = run(g, backend, permute=t.permute(2, 0, 1), reshape=t.reshape(-1, 4),
              reshape_tuple=t.reshape((4, 6)), transpose=tm.transpose(), T=tm.T,
              swap=t.transpose(0, 2))
    exact(out["permute"], np.transpose(x, (2, 0, 1)))
    exact(out["reshape"], x.reshape(-1, 4))
    exact(out["reshape_tuple"], x.reshape(4, 6))
    exact(out["transpose"], m.T)
    exact(out["T"], m.T)
    exact(out["swap"], np.swapaxes(x, 0, 2))


def test_layout_moves_integer_and_bool_tensors_exactly(backend, rng):
    ints = rng.integers(-1000, 1000, size=(3, 4)).astype(np.int32)
    mask = rng.random((2, 3, 4)) < 0.5
    g = scellis.Graph()
    ti, tm = g.input("ints", ints, dtype="i32"), g.input("mask", mask, dtype=np.bool_)
    out = run(g, backend, ints_t=ti.transpose(), mask_p=tm.permute(1, 2, 0),
              mask_r=tm.reshape(6, 4))
    assert out["ints_t"].dtype == np.int32 and out["mask_p"].dtype == np.bool_
    np.testing.assert_array_equal(out["ints_t"], ints.T)
    np.testing.assert_array_equal(out["mask_p"], np.transpose(mask, (1, 2, 0)))
    np.testing.assert_array_equal(out["mask_r"], mask.reshape(6, 4))


def test_integer_arithmetic_wraps_as_numpy(backend, rng):
    """u32 and i32 feeds computed as integers, wrapping modulo 2^32 as NumPy's uint32 and int32."""
    u = rng.integers(0, 2**32, size=(3, 5), dtype=np.uint64).astype(np.uint32)
    v = rng.integers(0, 2**32, size=(3, 5), dtype=np.uint64).astype(np.uint32)
    u[0, :3], v[0, :3] = [0xFFFFFFFF, 0, 0x80000000], [1, 1, 0x80000000]
    i = rng.integers(-2**31, 2**31, size=(3, 5), dtype=np.int64).astype(np.int32)
    i[0, :2] = [-2**31, 2**31 - 1]
    g = scellis.Graph()
    tu, tv, ti = g.input("u", u, dtype="u32"), g.input("v", v, dtype="u32"), g.input("i", i,
                                                                                     dtype="i32")
    out = run(g, backend, s=tu + tv, d=tu - tv, p=tu * tv, big=tu + 4000000000, w=ti * 3 + ti)
    assert out["s"].dtype == np.uint32 and out["w"].dtype == np.int32
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out["s"], u + v)
        np.testing.assert_array_equal(out["d"], u - v)
        np.testing.assert_array_equal(out["p"], u * v)
        np.testing.assert_array_equal(out["big"], u + np.uint32(4000000000))
        np.testing.assert_array_equal(out["w"], i * np.int32(3) + i)


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_softmax_and_log_softmax(backend, rng):
    x, y = f32(rng, 4, 7, low=-4, high=4), f32(rng, 3, 4, 5, low=-4, high=4)
    g = scellis.Graph()
    tx, ty = g.input("x", x), g.input("y", y)
    out = run(g, backend, softmax=tx.softmax(), log_softmax=tx.log_softmax(-1),
              softmax_0=tx.softmax(axis=0), log_softmax_1=ty.log_softmax(1))
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    close(out["softmax"], _softmax(x64, -1))
    close(out["log_softmax"], np.log(_softmax(x64, -1)))
    close(out["softmax_0"], _softmax(x64, 0))
    close(out["log_softmax_1"], np.log(_softmax(y64, 1)))


def test_cross_entropy_and_gradients(backend, rng):
    logits = f32(rng, 6, 5, low=-3, high=3)
    target = rng.integers(0, 5, size=6).astype(np.float32)
    upstream = np.float32(rng.uniform(0.5, 2.0))
    x, up = f32(rng, 3, 4), f32(rng, 3, 4)
    g = scellis.Graph()
    tl, tt = g.input("logits", logits), g.input("target", target)
    tu = g.input("upstream", np.array(upstream))
    tx, tup = g.input("x", x), g.input("up", up)
    out = run(g, backend, loss=tl.cross_entropy(tt), dlogits=tl.cross_entropy_grad(tt, tu),
              dgelu=tx.gelu_grad(tup))
    l64 = logits.astype(np.float64)
    p = _softmax(l64, -1)
    rows = np.arange(6)
    idx = target.astype(int)
    close(out["loss"], -np.log(p[rows, idx]).mean())
    onehot = np.zeros_like(p)
    onehot[rows, idx] = 1
    close(out["dlogits"], (p - onehot) / 6 * float(upstream))
    x64 = x.astype(np.float64)
    dgelu = 0.5 * (1 + _erf(x64 / math.sqrt(2))) + x64 * np.exp(-x64 * x64 / 2) / math.sqrt(
        2 * math.pi)
    close(out["dgelu"], up.astype(np.float64) * dgelu)


def test_life_and_full(backend, rng):
    grid = (rng.random((8, 8)) < 0.4).astype(np.float32)
    x = f32(rng, 2, 3)
    g = scellis.Graph()
    tg, tx = g.input("grid", grid), g.input("x", x)
    out = run(g, backend, next=tg.life(), shifted=tx + g.full((2, 3), 1.5),
              filled=g.full((2, 2), -0.25))
    n = sum(np.roll(np.roll(grid, dy, 0), dx, 1)
            for dy in (-1, 0, 1) for dx in (-1, 0, 1) if (dy, dx) != (0, 0))
    exact(out["next"], ((n == 3) | ((grid == 1) & (n == 2))).astype(np.float64))
    exact(out["shifted"], x.astype(np.float64) + 1.5)
    exact(out["filled"], np.full((2, 2), -0.25))


def test_optimizer_updates_match_pytorch_formulas(backend, rng):
    p, gr, vel, m, v = (f32(rng, 5, 4) for _ in range(5))
    v = np.abs(v)
    t = np.array(3.0, np.float32)
    g = scellis.Graph()
    tp, tg, tvel, tm, tv, tt = (g.input(n, a) for n, a in
                                (("p", p), ("g", gr), ("vel", vel), ("m", m), ("v", v), ("t", t)))
    sgd = g.sgd(tp, tg, lr=0.1, weight_decay=0.01)
    mom_p, mom_v = g.momentum(tp, tg, tvel, tt, lr=0.05, momentum=0.9, dampening=0.1,
                              weight_decay=0.02, nesterov=False)
    adam_p, adam_m, adam_v = g.adam(tp, tg, tm, tv, tt, lr=0.01, beta1=0.8, beta2=0.99,
                                    eps=1e-6, weight_decay=0.1, decoupled=True)
    out = run(g, backend, sgd=sgd, mom_p=mom_p, mom_v=mom_v, adam_p=adam_p, adam_m=adam_m,
              adam_v=adam_v)
    P, G, VEL, M, V = (a.astype(np.float64) for a in (p, gr, vel, m, v))
    close(out["sgd"], P - 0.1 * (G + 0.01 * P))
    d = G + 0.02 * P
    new_vel = 0.9 * VEL + (1 - 0.1) * d
    close(out["mom_v"], new_vel)
    close(out["mom_p"], P - 0.05 * new_vel)
    # AdamW, step 3: decoupled decay, then the bias-corrected moments (torch.optim.AdamW).
    m_new = 0.8 * M + 0.2 * G
    v_new = 0.99 * V + 0.01 * G * G
    step = 3
    want = P * (1 - 0.01 * 0.1) - 0.01 / (1 - 0.8 ** step) * m_new / (
        np.sqrt(v_new) / math.sqrt(1 - 0.99 ** step) + 1e-6)
    close(out["adam_m"], m_new)
    close(out["adam_v"], v_new)
    close(out["adam_p"], want)


def test_an_op_the_table_lacks_is_refused_by_name_and_leaves_the_graph_as_it_was():
    g = scellis.Graph()
    x = g.input("x", np.ones((2, 2), np.float32))
    before = g.to_json(x=x)
    with pytest.raises(scellis.UnsupportedOpError) as e:
        g.op("conv2d", a=x)
    assert e.value.code == "unknown-op" and "conv2d" in str(e.value)
    assert g.to_json(x=x) == before
    assert "relu" in scellis.ops.names() and "conv2d" not in scellis.ops.names()
    # Any op the table has is reachable by name, with its attributes.
    out = g.run(backend="cpu", tier="prod", y=g.op("mul", a=x, scalar=-3.0).relu(),
                z=g.op("sum", a=x, axis=0))
    np.testing.assert_array_equal(out["y"], np.zeros((2, 2), np.float32))
    np.testing.assert_array_equal(out["z"], np.full(2, 2.0, np.float32))
