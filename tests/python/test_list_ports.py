"""List-valued ports from Python: scellis.concat and scellis.stack (torch.cat and torch.stack
semantics) against NumPy's concatenate and stack, on the CPU reference and on WebGPU (SwiftShader);
their documents, shapes and protocol version; Graph.op with a list; bad lists refused with the
engine's diagnostic and the entry's pointer; the ops inside a traced pipeline and through
torch.compile."""
import json

import numpy as np
import pytest

import scellis
from conftest import f32


def run(g, backend, **outputs):
    r = g.run(tier="prod", **backend, **outputs)
    assert r.backend == backend["backend"]
    return r.outputs


def test_concat_and_stack_move_bits_as_numpy_does(backend, rng):
    a, b, c = f32(rng, 2, 3, 4), f32(rng, 2, 5, 4), f32(rng, 2, 1, 4)
    d = np.zeros((2, 0, 4), np.float32)   # an entry empty along the axis
    g = scellis.Graph()
    ta, tb, tc, td = g.input("a", a), g.input("b", b), g.input("c", c), g.input("d", d)
    joins = {
        "cat1": scellis.concat([ta, tb, td, tc], axis=1),
        "cat_neg": scellis.concat([tc, ta, tc], axis=-2),
        "cat0": g.concat([ta, ta], 0),
        "cat_one": scellis.concat([tb]),
        "stack0": scellis.stack([ta, ta * 2.0, ta]),
        "stack_last": scellis.stack([tc, tc + 1.0], axis=-1),
        "stack_mid": g.stack((tb, tb), axis=2),
    }
    want = {
        "cat1": np.concatenate([a, b, d, c], axis=1),
        "cat_neg": np.concatenate([c, a, c], axis=-2),
        "cat0": np.concatenate([a, a], 0),
        "cat_one": b,
        "stack0": np.stack([a, (a.astype(np.float64) * 2).astype(np.float32), a]),
        "stack_last": np.stack([c, (c.astype(np.float64) + 1).astype(np.float32)], axis=-1),
        "stack_mid": np.stack([b, b], axis=2),
    }
    for name, t in joins.items():
        assert t.shape == want[name].shape, name   # tracked here as NumPy computes it
    out = run(g, backend, **joins)
    for name, w in want.items():
        assert out[name].shape == w.shape, name
        np.testing.assert_array_equal(out[name], w, err_msg=name)


def test_integer_and_bool_lists_keep_their_dtype(backend, rng):
    i = rng.integers(-1000, 1000, size=(3, 2)).astype(np.int32)
    m = rng.uniform(size=(3, 2)) < 0.5
    g = scellis.Graph()
    ti, tm = g.input("i", i, dtype="i32"), g.input("m", m, dtype="bool")
    cat, st = scellis.concat([ti, ti], axis=1), scellis.stack([tm, tm], 0)
    assert (cat.dtype, st.dtype) == ("i32", "bool")
    out = run(g, backend, cat=cat, st=st)
    np.testing.assert_array_equal(out["cat"], np.concatenate([i, i], axis=1))
    assert out["cat"].dtype == np.int32
    np.testing.assert_array_equal(out["st"], np.stack([m, m]))
    assert out["st"].dtype == np.bool_


def test_the_document_lists_the_entries_in_order_and_needs_version_4():
    g = scellis.Graph()
    a, b = g.input("a", np.ones((2, 2), np.float32)), g.input("b", np.zeros((1, 2), np.float32))
    out = scellis.concat([b, a, b], axis=0)
    doc = json.loads(g.to_json(out=out))
    node = doc["nodes"][-1]
    assert node == {"id": 2, "op": "concat", "inputs": [1, 0, 1], "axis": 0}
    assert doc["version"] == 4 and g.lowest_version(out=out) == 4
    # Only what the list reaches is written: an input no entry names is left out.
    g.input("unused", np.ones(3, np.float32))
    assert [n["id"] for n in json.loads(g.to_json(out=out))["nodes"]] == [0, 1, 2]


def test_graph_op_takes_a_list_for_a_list_port(backend, rng):
    a, b = f32(rng, 3), f32(rng, 3)
    g = scellis.Graph()
    ta, tb = g.input("a", a), g.input("b", b)
    out = run(g, backend, s=g.op("stack", inputs=[tb, ta], axis=1),
              c=g.op("concat", inputs=(ta, tb, ta)))
    np.testing.assert_array_equal(out["s"], np.stack([b, a], axis=1))
    np.testing.assert_array_equal(out["c"], np.concatenate([a, b, a]))


def test_bad_lists_are_refused_when_added_with_the_engines_diagnostic_and_pointer():
    g = scellis.Graph()
    a = g.input("a", np.ones((2, 3), np.float32))
    v = g.input("v", np.ones(2, np.float32))
    i = g.input("i", np.ones((2, 3), np.int32), dtype="i32")
    # The engine checks each node as it is added; a refused one leaves no trace, so each would
    # be the fourth node, and the pointer names the entry that does not fit.
    cases = {
        "rank": (lambda: scellis.concat([a, v], axis=0), "shape-mismatch", "/nodes/3/inputs/1"),
        "dtype": (lambda: scellis.concat([a, i]), "dtype-mismatch", "/nodes/3/inputs/1"),
        "shape": (lambda: scellis.stack([a, a.transpose()]), "shape-mismatch",
                  "/nodes/4/inputs/1"),   # after the transpose (#3)
        "empty": (lambda: g.concat([]), "empty-input-list", "/nodes/4/inputs"),
    }
    for name, (add, code, pointer) in cases.items():
        with pytest.raises(scellis.GraphError) as e:
            add()
        assert (e.value.code, e.value.pointer) == (code, pointer), (name, e.value.text)
    assert len(g._nodes) == 4   # the inputs and the transpose
    with pytest.raises(scellis.GraphError) as e:
        scellis.stack([])   # no graph to add a node to: refused here, with the engine's code
    assert e.value.code == "empty-input-list"
    other = scellis.Graph().input("o", np.ones((2, 3), np.float32))
    with pytest.raises(scellis.GraphError) as e:
        scellis.concat([a, other])
    assert e.value.code == "foreign-tensor"
    with pytest.raises(TypeError):
        scellis.concat([a, np.ones((2, 3), np.float32)])


def test_a_refused_entry_leaves_the_graph_as_it_was():
    g = scellis.Graph()
    a = g.input("a", np.ones(2, np.float32))
    other = scellis.Graph().input("o", np.ones(2, np.float32))
    with pytest.raises(scellis.GraphError):
        g.stack([a, other])
    assert len(g._nodes) == 1


def test_a_traced_loop_concatenating_its_state_rolls_up(backend, rng):
    """A list entry that reads the loop's state is renumbered per entry when the pipeline rolls
    the unrolled trace up into a repeated body."""
    x0 = f32(rng, 4)

    @scellis.pipeline(tier="prod", **backend)
    def grow(x):
        for _ in range(5):
            both = scellis.stack([x, x * 0.5])          # (2, 4), entries read the state
            x = both.sum(0) + scellis.concat([x[1:], x[:1]])
        return x

    got = grow(x0)
    want = x0.astype(np.float32)
    for _ in range(5):
        want = (np.stack([want, want * np.float32(0.5)]).sum(0, dtype=np.float32)
                + np.concatenate([want[1:], want[:1]]))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert grow.trace(x0).repeat == 5


def test_torch_cat_and_stack_through_torch_compile(backend, rng):
    torch = pytest.importorskip("torch")
    import scellis.torch as st
    torch._dynamo.reset()
    torch.manual_seed(int(rng.integers(2**31)))

    def f(a, b):
        c = torch.cat([a, b * 2, a], dim=1)
        s = torch.stack((a, b), dim=-1)
        return torch.relu(c), s.sum(-1), torch.concat([a, b], 0)

    a, b = torch.randn(3, 4), torch.randn(3, 4)
    compiled = torch.compile(f, backend="scellis", options={"tier": "prod", **backend})
    with torch.no_grad():
        got = compiled(a, b)
    for g, want in zip(got, f(a, b)):
        torch.testing.assert_close(g, want, rtol=1e-6, atol=1e-6)
    report = st.last_report()
    assert report["subgraphs"] == 1 and report["breaks"] == {}, report
