"""Prepared sessions from Python: state carried over steps on the device, many steps in one
submission, download and upload, dispose, poisoning; checked against a float64 NumPy loop of the
same least-squares SGD, on the CPU reference and on WebGPU (SwiftShader)."""
import numpy as np
import pytest

import scellis
from conftest import f32

N, D, LR = 8, 3, 0.1


def regression_graph(w0):
    """Least squares by SGD with a hand-written gradient: loss = mean((x @ w - y)^2)."""
    g = scellis.Graph()
    x, y = g.input("x", (N, D)), g.input("y", (N, 1))
    w = g.param("w", w0)
    diff = x @ w - y
    loss = (diff * diff).mean()
    grad = (x.T @ diff) * (2.0 / N)
    return g, x, y, w, loss, g.sgd(w, grad, lr=LR)


def reference(w0, batches):
    w, losses = w0.astype(np.float64), []
    for x, y in batches:
        diff = x.astype(np.float64) @ w - y
        losses.append((diff * diff).mean())
        w = w - LR * (x.T.astype(np.float64) @ diff) * (2.0 / N)
    return np.array(losses), w


def batches(rng, k):
    return [(f32(rng, N, D), f32(rng, N, 1)) for _ in range(k)]


def prepare(backend, w0):
    g, x, y, w, loss, w_next = regression_graph(w0)
    s = g.prepare(feeds=[x, y], carry={w: w_next}, tier="prod", **backend, loss=loss)
    return s, x, y, w


def test_state_is_carried_over_single_steps_and_submissions(backend, rng):
    w0 = f32(rng, D, 1)
    data = batches(rng, 8)
    s, x, y, w = prepare(backend, w0)
    assert s.backend == backend["backend"] and s.fallback_reason is None
    first = [s.run({x: a, "y": b})["loss"] for a, b in data[:3]]
    rest = s.run_steps([{"x": a, y: b} for a, b in data[3:]])["loss"]
    assert rest.shape == (5,)
    assert s.stats["steps"] == 5
    losses = np.concatenate([np.array(first), rest])
    want_losses, want_w = reference(w0, data)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s.download(w), want_w, rtol=1e-5, atol=1e-6)
    s.dispose()


def test_steps_in_one_submission_equal_single_steps_bit_for_bit(backend, rng):
    w0 = f32(rng, D, 1)
    data = batches(rng, 6)
    one, x, y, w = prepare(backend, w0)
    many, *_ = prepare(backend, w0)
    singles = np.array([one.run({"x": a, "y": b})["loss"] for a, b in data])
    together = many.run_steps([{"x": a, "y": b} for a, b in data])["loss"]
    np.testing.assert_array_equal(singles, together)
    np.testing.assert_array_equal(one.download("w"), many.download("w"))


def test_upload_replaces_the_carried_state(backend, rng):
    w0 = f32(rng, D, 1)
    (a, b), = batches(rng, 1)
    s, x, y, w = prepare(backend, w0)
    s.upload(w, np.zeros((D, 1), np.float32))
    np.testing.assert_array_equal(s.download("w"), np.zeros((D, 1), np.float32))
    loss = s.run({"x": a, "y": b})["loss"]
    np.testing.assert_allclose(loss, (b.astype(np.float64) ** 2).mean(), rtol=1e-6)
    with pytest.raises(scellis.GraphError) as e:
        s.upload(w, np.zeros((D, 2), np.float32))
    assert e.value.code == "bad-upload"


def test_bad_feeds_are_refused_and_leave_the_session_as_it_was(backend, rng):
    w0 = f32(rng, D, 1)
    (a, b), = batches(rng, 1)
    s, x, y, w = prepare(backend, w0)
    before = s.download(w)
    bad = [
        ({"x": a.astype(np.float64), "y": b}, "bad-feed"),   # wrong dtype
        ({"x": a[:, :2].copy(), "y": b}, "bad-feed"),       # wrong shape
        ({"x": a, "z": b}, "bad-feed"),                      # no such input
        ({"x": a}, "missing-input-data"),                    # y not fed
    ]
    for feeds, code in bad:
        with pytest.raises(scellis.GraphError) as e:
            s.run(feeds)
        assert e.value.code == code, (feeds.keys(), e.value)
        assert not s.poisoned
    with pytest.raises(scellis.GraphError) as e:
        s.run_steps([{"x": a, "y": b}] * (scellis.MAX_STEPS_PER_SUBMISSION + 1))
    assert e.value.code == "bad-step-count"
    np.testing.assert_array_equal(s.download(w), before)
    # Nothing was half-done: the next step is the first step.
    loss = s.run({"x": a, "y": b})["loss"]
    np.testing.assert_allclose(loss, reference(w0, [(a, b)])[0][0], rtol=1e-5)


def test_a_disposed_session_refuses_every_call_by_name(backend, rng):
    s, x, y, w = prepare(backend, f32(rng, D, 1))
    s.dispose()
    (a, b), = batches(rng, 1)
    for call in (lambda: s.run({"x": a, "y": b}), lambda: s.run_steps([{"x": a, "y": b}]),
                 lambda: s.download("w"), lambda: s.upload("w", np.zeros((D, 1), np.float32))):
        with pytest.raises(scellis.SessionStateError) as e:
            call()
        assert e.value.code == "session-disposed"


def test_a_non_finite_watched_value_poisons_the_session(backend):
    g = scellis.Graph()
    x = g.input("x", (3,))
    with g.prepare(feeds=[x], tier="prod", **backend, y=x.log()) as s:
        ok = s.run({"x": np.array([1, 2, 4], np.float32)})["y"]
        np.testing.assert_allclose(ok, np.log([1, 2, 4]), rtol=1e-5)
        with pytest.raises(scellis.DeviceError) as e:
            s.run({"x": np.array([1, -1, 4], np.float32)})
        assert e.value.code == "non-finite-readback" and s.poisoned
        with pytest.raises(scellis.SessionStateError) as e:
            s.run({"x": np.array([1, 2, 4], np.float32)})
        assert e.value.code == "session-poisoned"


def test_resident_outputs_are_downloaded_not_read_back_per_run(backend, rng):
    a = f32(rng, 4)
    g = scellis.Graph()
    x = g.input("x", (4,))
    acc = g.param("acc", np.zeros(4, np.float32))
    total = acc + x
    s = g.prepare(feeds=[x], carry={acc: total}, resident={"doubled": total * 2.0}, tier="prod",
                  **backend)
    for _ in range(3):
        assert s.run({"x": a}) == {}
    np.testing.assert_array_equal(s.download("acc"), (a + a) + a)
    np.testing.assert_array_equal(s.download("doubled"), ((a + a) + a) * 2)
    s.dispose()


def test_graph_constants_are_handed_over_once_and_hold_on_every_step(backend, rng):
    m, bias = f32(rng, 3, 2), f32(rng, 2)
    ids = rng.integers(-50, 50, size=(2, 3)).astype(np.int32)
    g = scellis.Graph()
    x = g.input("x", (4, 3))
    tm, tb, ti = g.input("m", m), g.input("bias", bias), g.input("ids", ids, dtype="i32")
    with g.prepare(feeds=[x], tier="prod", **backend, y=x @ tm + tb, ids_t=ti.transpose()) as s:
        batches = [f32(rng, 4, 3) for _ in range(3)]
        out = s.run_steps([{"x": b} for b in batches])
        for k, b in enumerate(batches):
            want = b.astype(np.float64) @ m.astype(np.float64) + bias
            np.testing.assert_allclose(out["y"][k], want, rtol=1e-5, atol=1e-5)
            np.testing.assert_array_equal(out["ids_t"][k], ids.T)
        np.testing.assert_array_equal(s.download("m"), m)
