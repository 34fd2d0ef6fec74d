"""User ops defined from Python (scellis.define_op): a stencil with a NumPy reference, run on the
CPU reference (the function runs in the op's place) and on WebGPU (the WGSL), both against NumPy;
conformance proves the WGSL against the function, and a wrong kernel fails naming its first
mismatching element; a reference that raises or returns another shape raises UserReferenceError."""
import re

import numpy as np
import pytest

import scellis
from conftest import f32

WGSL = """
fn stencil(index: u32) -> f32 {
  let rows = U_SHAPE_0;
  let cols = U_SHAPE_1;
  let r = index / cols;
  let c = index % cols;
  var s = 0.0;
  if (r > 0u) { s = s + u_at(index - cols); }
  if (r + 1u < rows) { s = s + u_at(index + cols); }
  if (c > 0u) { s = s + u_at(index - 1u); }
  if (c + 1u < cols) { s = s + u_at(index + 1u); }
  return 0.25 * s + w_at(index);
}
"""


def padded_stencil(u, w):
    p = np.pad(u.astype(np.float64), 1)
    return 0.25 * (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:]) + w


def looped_stencil(u, w):
    """The same in plain loops, apart from the reference function."""
    rows, cols = u.shape
    out = np.zeros((rows, cols))
    for r in range(rows):
        for c in range(cols):
            s = 0.0
            for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
                if 0 <= r + dr < rows and 0 <= c + dc < cols:
                    s += float(u[r + dr, c + dc])
            out[r, c] = 0.25 * s + float(w[r, c])
    return out


def define(wgsl=WGSL, reference=padded_stencil, version="1"):
    return scellis.define_op("stencil", inputs=[{"name": "u", "rank": 2}, "w"], shape="u",
                             tolerance="tight", wgsl=wgsl, reference=reference, version=version)


def test_a_user_op_runs_against_numpy(backend, rng):
    calls = []

    def reference(u, w):
        calls.append(u.shape)
        return padded_stencil(u, w)

    op = define(reference=reference)
    u, w = f32(rng, 7, 11), f32(rng, 7, 11)
    g = scellis.Graph()
    out = op(g.input("u", u), w=g.input("w", w))
    assert out.shape == (7, 11)
    r = g.run(tier="prod", **backend, out=out)
    np.testing.assert_allclose(r.outputs["out"], looped_stencil(u, w), rtol=0, atol=1e-5)
    assert calls == ([(7, 11)] if backend["backend"] == "cpu" else [])


def test_a_user_op_steps_in_a_prepared_session(backend, rng):
    u, w = f32(rng, 5, 6), f32(rng, 5, 6)
    g = scellis.Graph()
    grid = g.input("u", u)
    nxt = define()(grid, g.input("w", w))
    with g.prepare(carry={grid: nxt}, tier="prod", **backend, out=nxt) as s:
        got = s.run_steps(3)["out"]
    want = u
    for step in range(3):
        want = looped_stencil(want, w)
        np.testing.assert_allclose(got[step], want, rtol=0, atol=1e-5)


def test_conformance_proves_the_wgsl_against_the_function(tmp_path):
    report = scellis.conform([define()], tier="prod", allow_software_adapter=True,
                             store=str(tmp_path))
    [op] = report["ops"]
    assert report["ok"] and op["op"] == "stencil" and op["passed"], op["failures"]
    assert op["cases"] == 6 and op["receipt"]

    wrong = define(wgsl=WGSL.replace("u_at(index + 1u)", "u_at(index + 2u)"))
    report = scellis.conform([wrong], tier="prod", allow_software_adapter=True,
                             store=str(tmp_path))
    [op] = report["ops"]
    assert not report["ok"] and not op["passed"] and op["receipt"] is None
    # A 1x1 grid has no right neighbour; a 1x9 row reads u[0, 2] for u[0, 1] first at [0, 0].
    failed = {f["case"]: f["message"] for f in op["failures"]}
    assert "stencil/r2_1x1" not in failed
    assert "first at [0, 0]" in failed["stencil/r2_1x9"], failed


def test_an_exception_in_the_reference_is_a_typed_error(rng):
    def broken(u, w):
        raise ValueError("no stencil for this grid")

    g = scellis.Graph()
    out = define(reference=broken)(g.input("u", f32(rng, 3, 4)), g.input("w", f32(rng, 3, 4)))
    with pytest.raises(scellis.UserReferenceError) as e:
        g.run(tier="prod", backend="cpu", out=out)
    assert e.value.code == "user-reference-failed"
    assert e.value.pointer == "/ops/stencil/reference"
    assert isinstance(e.value.__cause__, ValueError)

    g = scellis.Graph()
    out = define(reference=lambda u, w: u[0])(g.input("u", f32(rng, 3, 4)),
                                              g.input("w", f32(rng, 3, 4)))
    with pytest.raises(scellis.UserReferenceError) as e:
        g.run(tier="prod", backend="cpu", out=out)
    assert e.value.code == "user-reference-shape"


def test_a_wrong_definition_is_refused_by_name():
    with pytest.raises(scellis.GraphError) as e:
        scellis.define_op("relu", inputs=["a"], shape="a", wgsl="fn relu(index: u32) -> f32 {}",
                          reference=lambda a: a)
    assert e.value.code == "op-name-taken"
    with pytest.raises(scellis.GraphError) as e:
        scellis.define_op("twice", inputs=["a"], shape="b", wgsl="fn twice(i: u32) -> f32 {}",
                          reference=lambda a: 2 * a)
    assert e.value.code == "bad-shape-rule"


# ---- a gradient whose reference is a function ----

SOFTPLUS_WGSL = """
fn softplus(index: u32) -> f32 {
  let v = x_at(index);
  return max(v, 0.0) + log(1.0 + exp(-abs(v)));
}
"""
SOFTPLUS_GRAD_WGSL = """
fn softplus_grad_x(index: u32) -> f32 {
  return grad_at(index) / (1.0 + exp(-x_at(index)));
}
"""


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=np.float64)))


def define_softplus(gradient=lambda x, grad: grad / (1 + np.exp(-x)),
                    wgsl=SOFTPLUS_GRAD_WGSL, seen=None, dtype=None):
    def forward(x):
        if seen is not None:
            seen.add(x.dtype)
        x = x if dtype is None else x.astype(dtype)
        return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))

    return scellis.define_op("softplus", inputs=[{"name": "x", "rank": 1}], shape="x",
                             wgsl=SOFTPLUS_WGSL, reference=forward,
                             gradient={"x": {"wgsl": wgsl, "reference": gradient,
                                             "version": "1"}})


def test_a_gradient_conforms_and_is_grad_checked_in_float64(tmp_path):
    seen = set()
    report = scellis.conform([define_softplus(seen=seen)], tier="prod",
                             allow_software_adapter=True, store=str(tmp_path))
    [op] = report["ops"]
    assert report["ok"] and op["passed"] and op["receipt"], op["failures"]
    assert op["cases"] == 5 + 5 + 2  # forward, its gradient's WGSL, the grad-check
    # The device cases call the forward with float32, the grad-check with float64.
    assert seen == {np.dtype(np.float32), np.dtype(np.float64)}


def test_a_wrong_gradient_fails_the_grad_check_at_its_first_element(tmp_path):
    calls = []

    def wrong(x, grad):  # d/dx exp(x), for d/dx log(1 + exp(x))
        if x.dtype == np.float64:
            calls.append((x.copy(), grad.copy()))
        return grad * np.exp(x)

    op = define_softplus(gradient=wrong,
                         wgsl=SOFTPLUS_GRAD_WGSL.replace("/ (1.0 + exp(-x_at(index)))",
                                                         "* exp(x_at(index))"))
    report = scellis.conform([op], tier="prod", allow_software_adapter=True, store=str(tmp_path))
    [result] = report["ops"]
    assert not report["ok"] and result["receipt"] is None
    failed = {f["case"]: f["message"] for f in result["failures"]}
    # The WGSL matches its function on every case; only the grad-check can tell.
    assert set(failed) == {"softplus/gradcheck_x_r1_1", "softplus/gradcheck_x_r1_7"}, failed
    message = failed["softplus/gradcheck_x_r1_7"]
    assert "7 of 7 elements outside tolerance; first at [0]" in message, message
    x, grad = calls[-1]
    assert x.shape == (7,)
    got, want = (float(v) for v in re.search(r"got (\S+), want (\S+)$", message).groups())
    np.testing.assert_allclose(got, grad[0] * np.exp(x[0]), rtol=5e-3)
    np.testing.assert_allclose(want, grad[0] * sigmoid(x[0]), rtol=5e-3)


def test_autodiff_through_the_op_gives_the_hand_derived_gradient(backend, rng):
    # loss = sum(softplus(w)) under SGD with lr 1: w <- w - sigmoid(w).
    document = {
        "format": "scellis.workflow/1", "name": "sum of softplus", "determinism": "prod",
        "nodes": [{"id": "w", "type": "param", "params": {"name": "w", "shape": [9], "init": {
                      "kind": "uniform", "low": -3, "high": 3, "seed": 1}}},
                  {"id": "s", "type": "softplus"}, {"id": "loss", "type": "sum"}],
        "wires": [{"from": "w", "to": "s.x"}, {"from": "s", "to": "loss.a"}],
        "outputs": [{"name": "loss", "from": "loss"}],
        "train": {"loss": "loss", "optimizer": {"kind": "sgd", "lr": 1}}}
    w = f32(rng, 9, low=-3, high=3)
    op = define_softplus()
    with scellis.prepare_workflow(document, ops=[op], initial={"w": w}, **backend) as session:
        loss = session.run({"step": np.float32(1)})["loss"]
        after = np.array(session.download("w"))
    np.testing.assert_allclose(loss, np.sum(np.log1p(np.exp(w.astype(np.float64)))), rtol=1e-5)
    np.testing.assert_allclose(w - after, sigmoid(w), rtol=0, atol=1e-5)


def test_a_forward_that_drops_float64_fails_the_grad_check_by_name(tmp_path):
    # Central differences of float32 values would measure rounding: refused, not blurred.
    report = scellis.conform([define_softplus(dtype=np.float32)], tier="prod",
                             allow_software_adapter=True, store=str(tmp_path))
    [op] = report["ops"]
    failed = {f["case"]: f["message"] for f in op["failures"]}
    assert set(failed) == {"softplus/gradcheck_x_r1_1", "softplus/gradcheck_x_r1_7"}, failed
    assert "float32 for float64 inputs" in failed["softplus/gradcheck_x_r1_7"], failed
