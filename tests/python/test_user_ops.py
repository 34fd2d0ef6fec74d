"""User ops defined from Python (scellis.define_op): a stencil with a NumPy reference, run on the
CPU reference (the function runs in the op's place) and on WebGPU (the WGSL), both against NumPy;
conformance proves the WGSL against the function, and a wrong kernel fails naming its first
mismatching element; a reference that raises or returns another shape raises UserReferenceError."""
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
