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


def test_two_runs_in_flight_give_the_runs_one_at_a_time_bit_for_bit(backend, rng):
    w0 = f32(rng, D, 1)
    data = batches(rng, 6)
    one, x, y, w = prepare(backend, w0)
    two, *_ = prepare(backend, w0)
    runs = [[{"x": a, "y": b} for a, b in data[i:i + 2]] for i in (0, 2, 4)]
    want = [one.run_steps(r)["loss"] for r in runs]

    two.start(runs[0])
    two.start(runs[1])
    assert two.runs_in_flight == 2
    for call, code in ((lambda: two.start(runs[2]), "too-many-runs-in-flight"),
                       (lambda: two.download("w"), "runs-in-flight"),
                       (lambda: two.run(runs[2][0]), "runs-in-flight")):
        with pytest.raises(scellis.SessionStateError) as e:
            call()
        assert e.value.code == code
    got = [two.finish()["loss"]]
    two.start(runs[2])
    got += [two.finish()["loss"], two.finish()["loss"]]
    assert two.runs_in_flight == 0
    with pytest.raises(scellis.SessionStateError) as e:
        two.finish()
    assert e.value.code == "no-run-in-flight"
    for g, r in zip(got, want):
        np.testing.assert_array_equal(g, r)
    np.testing.assert_array_equal(two.download("w"), one.download(w))
    want_losses, want_w = reference(w0, data)
    np.testing.assert_allclose(np.concatenate(got), want_losses, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(two.download("w"), want_w, rtol=1e-5, atol=1e-6)
    # Disposing with a run in flight waits for it.
    two.start(runs[0])
    two.dispose()
    assert two.runs_in_flight == 0


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


def test_a_non_finite_watched_value_poisons_a_session_that_carries_state(backend):
    g = scellis.Graph()
    x = g.input("x", (3,))
    acc = g.param("acc", np.zeros(3, np.float32))
    total = acc + x.log()
    with g.prepare(feeds=[x], carry={acc: total}, tier="prod", **backend, y=total) as s:
        ok = s.run({"x": np.array([1, 2, 4], np.float32)})["y"]
        np.testing.assert_allclose(ok, np.log([1, 2, 4]), rtol=1e-5)
        with pytest.raises(scellis.DeviceError) as e:
            s.run({"x": np.array([1, -1, 4], np.float32)})
        assert e.value.code == "non-finite-readback" and s.poisoned
        with pytest.raises(scellis.SessionStateError) as e:
            s.run({"x": np.array([1, 2, 4], np.float32)})
        assert e.value.code == "session-poisoned"


def test_a_stateless_session_returns_non_finite_values(backend):
    """NaN in, NaN out: without carried state nothing diverges, and the value is the answer."""
    g = scellis.Graph()
    x = g.input("x", (3,))
    with g.prepare(feeds=[x], tier="prod", **backend, y=x.log()) as s:
        with np.errstate(invalid="ignore", divide="ignore"):
            want = np.log(np.array([1, -1, 0], np.float64)).astype(np.float32)
        got = s.run({"x": np.array([1, -1, 0], np.float32)})["y"]
        np.testing.assert_array_equal(got, want)   # [0, nan, -inf]
        assert not s.poisoned


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


def test_an_mlp_trained_with_adam_in_a_session_follows_numpy(backend, rng):
    """A 5-6-3 ReLU MLP, softmax cross-entropy, its backward written with the table's gradient
    ops, Adam state (m, v and the step t) carried on the device; 10 steps in one submission
    against the same training in float64 NumPy (torch.optim.Adam's update)."""
    n, d, h, c, steps, lr = 8, 5, 6, 3, 10, 0.01
    init = {"w1": f32(rng, d, h, low=-0.5, high=0.5), "b1": f32(rng, h, low=-0.1, high=0.1),
            "w2": f32(rng, h, c, low=-0.5, high=0.5), "b2": f32(rng, c, low=-0.1, high=0.1)}
    data = [(f32(rng, n, d), rng.integers(0, c, size=n).astype(np.float32))
            for _ in range(steps)]

    g = scellis.Graph()
    x, labels = g.input("x", (n, d)), g.input("labels", (n,))
    p = {k: g.param(k, v) for k, v in init.items()}
    t = g.input("t", np.float32(1.0))
    pre = x @ p["w1"] + p["b1"]
    hidden = pre.relu()
    logits = hidden @ p["w2"] + p["b2"]
    loss = logits.cross_entropy(labels)
    dlogits = logits.cross_entropy_grad(labels, g.full((), 1.0))
    dpre = (dlogits @ p["w2"].T) * pre.positive()
    grads = {"w2": hidden.T @ dlogits, "b2": dlogits.sum(0), "w1": x.T @ dpre, "b1": dpre.sum(0)}
    carry = {t: t + 1.0}
    for k, v in init.items():
        m, s = g.param(k + ".m", np.zeros_like(v)), g.param(k + ".v", np.zeros_like(v))
        carry[p[k]], carry[m], carry[s] = g.adam(p[k], grads[k], m, s, t, lr=lr)
    with g.prepare(feeds=[x, labels], carry=carry, tier="prod", **backend, loss=loss) as sess:
        losses = sess.run_steps([{"x": a, "labels": b} for a, b in data])["loss"]
        final = {k: sess.download(k) for k in init}
        assert sess.download("t") == steps + 1

    w = {k: v.astype(np.float64) for k, v in init.items()}
    m = {k: np.zeros_like(v) for k, v in w.items()}
    v2 = {k: np.zeros_like(v) for k, v in w.items()}
    want = []
    for step, (a, b) in enumerate(data, start=1):
        a = a.astype(np.float64)
        pre = a @ w["w1"] + w["b1"]
        hid = np.maximum(pre, 0)
        lg = hid @ w["w2"] + w["b2"]
        prob = np.exp(lg - lg.max(1, keepdims=True))
        prob /= prob.sum(1, keepdims=True)
        rows, idx = np.arange(n), b.astype(int)
        want.append(-np.log(prob[rows, idx]).mean())
        dl = prob.copy()
        dl[rows, idx] -= 1
        dl /= n
        dp = (dl @ w["w2"].T) * (pre > 0)
        grad = {"w2": hid.T @ dl, "b2": dl.sum(0), "w1": a.T @ dp, "b1": dp.sum(0)}
        for k in w:
            m[k] = 0.9 * m[k] + 0.1 * grad[k]
            v2[k] = 0.999 * v2[k] + 0.001 * grad[k] ** 2
            denom = np.sqrt(v2[k]) / np.sqrt(1 - 0.999 ** step) + 1e-8
            w[k] = w[k] - lr / (1 - 0.9 ** step) * m[k] / denom
    np.testing.assert_allclose(losses, want, rtol=1e-4, atol=1e-5)
    for k in init:
        np.testing.assert_allclose(final[k], w[k], rtol=1e-3, atol=1e-4, err_msg=k)
    assert not np.allclose(final["w1"], init["w1"])  # the weights moved


def test_a_run_beyond_what_the_plan_counted_is_refused_before_it_runs(rng):
    """The outputs a Python session watches and the steps it runs at once are known only at each
    run: a run whose staged feeds and watched history the device budget cannot hold is refused by
    name before anything is sent (the engine's execplan::JudgeRun), and one that fits runs. On
    SwiftShader, whose WebGPU buffers are what the budget holds: y = x + x over 65 536 floats
    (256 KiB), a declared budget of 4 MiB; 64 steps watching y stage 16 MiB of feeds and copy
    32 MiB of history, 2 steps 0.5 and 1 MiB."""
    n = 65536
    doc = {"format": "scellis.workflow/1", "name": "doubled", "determinism": "prod",
           "tolerance": "default", "budget": {"memory_bytes": 4 << 20},
           "nodes": [{"id": "x", "type": "input", "params": {"name": "x", "shape": [n]}},
                     {"id": "y", "type": "add"}],
           "wires": [{"from": "x", "to": "y.a"}, {"from": "x", "to": "y.b"}],
           "outputs": [{"name": "y", "from": "y"}]}
    s = scellis.prepare_workflow(doc, backend="webgpu", allow_software_adapter=True, watch=("y",))
    xs = [f32(rng, n) for _ in range(64)]
    with pytest.raises(scellis.GraphError) as refused:
        s.run_steps([{"x": x} for x in xs])
    assert refused.value.code == "memory-over-budget"
    assert "this run has 64 steps in flight and watches \"y\"" in refused.value.help
    assert not s.poisoned
    got = s.run_steps([{"x": x} for x in xs[:2]])["y"]
    np.testing.assert_array_equal(got, np.stack([x.astype(np.float64) * 2 for x in xs[:2]]))
    s.dispose()
