"""The engine types each node as it is added (_scellis.infer_node): a Tensor's shape and dtype
and the graph's version label are the engine's answers, checked here against NumPy and hand-worked
shapes; a bad node raises the engine's typed error, code and pointer when it is added (the same
diagnostic a document holding it gets), and leaves the graph as it was."""
import json

import numpy as np
import pytest

import scellis
from scellis import _scellis


def inputs(*shapes, dtype="f32"):
    g = scellis.Graph()
    return g, [g.input(f"x{i}", tuple(s), dtype=dtype) for i, s in enumerate(shapes)]


def test_shapes_and_dtypes_are_the_engines_as_numpy_computes_them():
    g, (a, b, c, m) = inputs((4, 1, 3), (2, 1), (2, 1, 3, 4), (5, 4, 6))
    z = np.zeros
    assert (a - b).shape == (z((4, 1, 3)) - z((2, 1))).shape == (4, 2, 3)
    assert (c @ m).shape == np.matmul(z((2, 1, 3, 4)), z((5, 4, 6))).shape == (2, 5, 3, 6)
    assert a.sum(1, keepdim=True).shape == (4, 1, 3)
    assert a.mean(-1).shape == (4, 1)
    assert a.sum().shape == ()
    assert scellis.concat([b, b, b], axis=-1).shape == (2, 3)
    assert scellis.stack([a, a], axis=1).shape == (4, 2, 1, 3)
    assert a.lt(b).dtype == "bool" and a.lt(b).shape == (4, 2, 3)
    assert a.reshape(3, -1).shape == (3, 4)
    assert c[1, :, ::2].shape == (1, 2, 4)     # the slice's shape, then the integer axis dropped
    assert a.permute(2, 0, 1).shape == (3, 4, 1)
    assert a.pad([(1, 0), (0, 2), (3, 3)]).shape == (5, 3, 9)
    assert g.op("sum", a=c, axis=0).shape == (1, 3, 4)   # Graph.op is typed too
    assert a.cast("i32").dtype == "i32"


def test_the_version_label_is_the_engines():
    g, (a, b, c) = inputs((2, 3), (3,), (4, 2, 3))
    assert g.lowest_version(s=a * 2.0) == 1       # the scalar form
    assert g.lowest_version(s=a + b) == 2         # broadcasting
    assert g.lowest_version(s=c @ a.T) == 2       # a batched matmul
    assert g.lowest_version(s=a.mean(0, keepdim=True)) == 2
    assert g.lowest_version(s=a.gt(0.0)) == 3     # a comparison op
    assert g.lowest_version(s=scellis.stack([a, a])) == 4
    assert g.lowest_version(s=a.shift([0, 1])) == 5
    assert g.lowest_version(s=g.arange((2, 3))) == 6


def test_a_bad_node_raises_the_engines_error_when_added():
    g, (a, b) = inputs((2, 3), (4,))
    cases = {
        "broadcast": (lambda: a + b, "shape-mismatch", "/nodes/2"),
        "matmul": (lambda: a @ a, "shape-mismatch", "/nodes/2"),
        "axis": (lambda: a.sum(2), "bad-axis", "/nodes/2"),
        "attribute": (lambda: g.op("relu", a=a, alpha=0.1), "unknown-attribute",
                      "/nodes/2/alpha"),
        "port": (lambda: g.op("matmul", a=a), "missing-input", "/nodes/2"),
        "dtype": (lambda: a.where(a, b), "dtype-mismatch", "/nodes/2/cond"),
    }
    for name, (add, code, pointer) in cases.items():
        with pytest.raises(scellis.GraphError) as e:
            add()
        assert (e.value.code, e.value.pointer) == (code, pointer), (name, e.value.text)
    assert len(g._nodes) == 2 and len(g._types) == len(g._needs) == 2   # nothing was added


def test_a_source_used_as_an_op_says_how_to_declare_it():
    g, (a,) = inputs((2, 3))
    for source in ("input", "param", "full"):
        with pytest.raises(scellis.GraphError) as e:
            g.op(source, a=a)
        assert e.value.code == "unknown-op", e.value.text
        assert f'"{source}" is a source of values' in e.value.text
        assert "Graph.input / Graph.param / Graph.full" in e.value.text
    assert len(g._nodes) == 1


def test_a_refused_where_takes_the_constants_it_made_with_it():
    # A number for `a` or `b` becomes a `full` node before the `where` is typed; when the engine
    # refuses the `where` (shapes (2, 3) and (4,) do not broadcast), the constant goes too.
    g, (a, b) = inputs((2, 3), (4,))
    cond = a.gt(a)
    count = len(g._nodes)
    with pytest.raises(scellis.GraphError):
        g.where(cond, 2.0, b)
    assert len(g._nodes) == len(g._types) == len(g._needs) == count
    assert g.where(cond, 2.0, a).shape == (2, 3)   # the graph still takes a good one
    assert len(g._nodes) == count + 2


def test_the_refusal_is_the_one_a_document_holding_the_node_gets():
    g, (a, b) = inputs((2, 3), (4,))
    with pytest.raises(scellis.GraphError) as added:
        a + b
    doc = {"version": 2, "nodes": [
        {"id": 0, "op": "input", "name": "x0", "shape": [2, 3]},
        {"id": 1, "op": "input", "name": "x1", "shape": [4]},
        {"id": 2, "op": "add", "a": 0, "b": 1}], "outputs": [{"name": "s", "id": 2}]}
    with pytest.raises(scellis.GraphError) as whole:
        _scellis.lower(json.dumps(doc), "webir", "prod", False)
    assert added.value.diagnostics == whole.value.diagnostics


def test_a_user_ops_node_is_typed_by_the_engines_rule_for_user_ops():
    op = scellis.define_op("twice", inputs=[{"name": "u", "rank": 2}], shape="u",
                           wgsl="fn twice(index: u32) -> f32 { return 2.0 * u_at(index); }",
                           reference=lambda u: 2 * u)
    g, (m, v) = inputs((3, 5), (5,))
    assert op(m).shape == (3, 5) and g.lowest_version(s=op(m)) == 6
    with pytest.raises(scellis.GraphError) as e:
        op(v)
    assert (e.value.code, e.value.pointer) == ("bad-rank", "/nodes/4/u")
    assert len(g._nodes) == 4


def test_infer_node_answers_for_one_node():
    shape_dtype, version = _scellis.infer_node(
        json.dumps({"id": 9, "op": "concat", "axis": 1}),
        {"inputs": [((2, 3), "f32"), ((2, 5), "f32")]}, "/nodes/9")
    assert shape_dtype == ((2, 8), "f32") and version == 4
    with pytest.raises(scellis.GraphError) as e:
        _scellis.infer_node(json.dumps({"id": 9, "op": "add"}),
                            {"a": ((2,), "f32"), "b": ((2,), "f64")}, "/nodes/9")
    assert e.value.code == "bad-dtype"
