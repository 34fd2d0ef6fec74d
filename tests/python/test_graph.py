"""The Graph as a document and as a run: protocol version labels the engine holds the graph to,
backend choice, the engine's named errors with their JSON pointers, submit's callbacks on the
worker thread, and the lowering rungs."""
import json
import threading

import numpy as np
import pytest

import scellis
from scellis.worker import Worker


def seed_graph():
    g = scellis.Graph()
    a = g.input("a", [-2, 3, 4])
    b = g.input("b", [10, 20, 30])
    return g, (a * b).relu()


def test_the_seed_graph_runs_and_is_labelled_version_1(backend):
    g, values = seed_graph()
    doc = json.loads(g.to_json(values=values))
    assert doc["version"] == 1
    assert [n["op"] for n in doc["nodes"]] == ["input", "input", "mul", "relu"]
    assert doc["nodes"][0]["data"] == [-2, 3, 4]
    r = g.run(tier="prod", **backend, values=values)
    np.testing.assert_array_equal(r.outputs["values"], np.array([0, 60, 120], np.float32))
    assert r.backend == backend["backend"] and r.executor
    assert r.stats["readback_bytes"] == 12 and r.determinism_tier == "prod"
    # Receipts are a GPU kernel's: the CPU reference is the oracle itself.
    if r.backend == "cpu":
        assert r.receipts is None
    else:
        assert r.receipts["kernels"] == 1 and len(r.receipts["by_kernel"]) == 1


def test_the_label_is_the_lowest_version_the_nodes_need_and_the_engine_holds_it():
    g = scellis.Graph()
    a = g.input("a", np.ones((2, 3), np.float32))
    b = g.input("b", np.ones(3, np.float32))
    assert g.lowest_version(s=a + a) == 1
    assert g.lowest_version(s=a + b) == 2          # broadcasting
    assert g.lowest_version(s=a / a) == 2          # div is a version-2 op
    assert g.lowest_version(s=a.sum()) == 1
    assert g.lowest_version(s=a.sum(0)) == 2       # an axis is version 2
    assert g.lowest_version(s=a @ a.T) == 1
    assert g.lowest_version(s=g.op("sum", a=a, axis=0)) == 2   # the same rules for Graph.op
    k = g.input("k", np.float32(2.0))
    assert g.lowest_version(s=a * k) == 1          # a rank-0 operand is version 1's scalar form
    r = scellis.Graph(version=1)
    ra, rk = r.input("a", np.ones((2, 3), np.float32)), r.input("k", np.float32(2.0))
    np.testing.assert_array_equal(r.run(backend="cpu", tier="prod", s=ra * rk)["s"],
                                  np.full((2, 3), 2.0, np.float32))
    assert json.loads(g.to_json(s=a + b))["version"] == 2
    # The same graphs labelled version 1 are refused by the engine, not misread.
    builds = (lambda a, b, c: a + b, lambda a, b, c: a / a, lambda a, b, c: a.sum(0),
              lambda a, b, c: c @ a)
    for build in builds:
        old = scellis.Graph(version=1)
        ta = old.input("a", np.ones((2, 3), np.float32))
        tb = old.input("b", np.ones(3, np.float32))
        tc = old.input("c", np.ones((4, 5, 2), np.float32))
        out = build(ta, tb, tc)
        assert json.loads(old.to_json(s=out))["version"] == 1
        with pytest.raises(scellis.GraphError) as e:
            old.run(backend="cpu", tier="prod", s=out)
        assert e.value.code == "op-newer-than-version"
        assert e.value.pointer.startswith("/nodes/")
        # Labelled with what it needs, the same graph runs.
        new = scellis.Graph()
        na = new.input("a", np.ones((2, 3), np.float32))
        nb = new.input("b", np.ones(3, np.float32))
        nc = new.input("c", np.ones((4, 5, 2), np.float32))
        assert json.loads(new.to_json(s=build(na, nb, nc)))["version"] == 2
        new.run(backend="cpu", tier="prod", s=build(na, nb, nc))


def test_a_missing_tier_is_an_error_as_on_the_command_line():
    g, values = seed_graph()
    with pytest.raises(scellis.GraphError) as e:
        g.run(backend="cpu", values=values)
    assert e.value.code == "missing-determinism-tier"
    with pytest.raises(scellis.GraphError) as e:
        g.run(backend="cpu", tier="fastest", values=values)
    assert e.value.code == "bad-tier"
    with pytest.raises(scellis.GraphError) as e:
        g.prepare(backend="cpu", values=values)
    assert e.value.code == "missing-determinism-tier"


def test_a_refused_source_leaves_the_graph_as_it_was():
    g, values = seed_graph()
    before = g.to_json(values=values)
    with pytest.raises(scellis.GraphError) as e:
        g.input("a", [1, 2, 3])
    assert e.value.code == "duplicate-name"
    with pytest.raises(scellis.GraphError) as e:
        g.input("c", [1, 2, 3], dtype="f64")
    assert e.value.code == "bad-dtype"
    assert g.to_json(values=values) == before and len(g._nodes) == 4


def test_a_shape_mismatch_names_the_node_by_its_json_pointer():
    g = scellis.Graph()
    a = g.input("a", np.ones((2, 3), np.float32))
    b = g.input("b", np.ones(4, np.float32))
    with pytest.raises(scellis.GraphError) as e:
        g.run(backend="cpu", tier="prod", s=a + b)
    assert e.value.code == "shape-mismatch"
    assert e.value.pointer == "/nodes/2"
    assert "[2, 3]" in e.value.message and "[4]" in e.value.message


def test_a_feed_of_the_wrong_dtype_or_shape_is_refused():
    g = scellis.Graph()
    x = g.input("x", (3,))
    for value in (np.ones(3, np.float64), np.ones(4, np.float32), [1.0, 2.0, 3.0]):
        with pytest.raises(scellis.GraphError) as e:
            g.run(backend="cpu", tier="prod", feeds={x: value}, y=x.relu())
        assert e.value.code == "bad-feed"
    r = g.run(backend="cpu", tier="prod", feeds={x: np.array([-1, 0, 2], np.float32)},
              y=x.relu())
    np.testing.assert_array_equal(r["y"], [0, 0, 2])


def test_feeds_are_read_from_read_only_and_memory_mapped_arrays_and_strided_views(tmp_path):
    data = np.arange(-6, 6, dtype=np.float32).reshape(4, 3)
    data.tofile(tmp_path / "batches.f32")
    mapped = np.memmap(tmp_path / "batches.f32", dtype=np.float32, mode="r", shape=(4, 3))
    assert not mapped.flags.writeable
    g = scellis.Graph()
    x = g.input("x", (3,))
    with g.prepare(feeds=[x], tier="prod", backend="cpu", y=x.relu()) as s:
        got = s.run_steps([{"x": row} for row in mapped])["y"]
        np.testing.assert_array_equal(got, np.maximum(data, 0))
        column = np.ascontiguousarray(data.T)[::-1].T[0]  # a strided view, copied contiguous
        np.testing.assert_array_equal(s.run({"x": column})["y"], np.maximum(column, 0))


def test_auto_runs_somewhere_and_says_why_it_fell_back():
    g, values = seed_graph()
    r = g.run(tier="prod", values=values)
    assert r.backend in ("cpu", "webgpu")
    if r.backend == "cpu":
        assert r.fallback_reason and r.executor == "reference"
    np.testing.assert_array_equal(r["values"], [0, 60, 120])


def test_an_explicit_backend_is_never_downgraded():
    g, values = seed_graph()
    # Without allow_software_adapter a software adapter is not a GPU: either a hardware adapter
    # runs it, or the run fails — it never runs elsewhere.
    try:
        r = g.run(backend="webgpu", tier="prod", values=values)
    except scellis.ScellisError as e:
        assert e.code  # refused by name: no adapter it may use
    else:
        assert r.backend == "webgpu" and r.fallback_reason is None


def test_submit_calls_back_on_the_worker_thread():
    g, values = seed_graph()
    got, errors, done = [], [], threading.Event()

    def callback(result):
        got.append((result, threading.current_thread().name))
        done.set()

    future = g.submit(callback, backend="cpu", tier="prod", values=values)
    assert done.wait(30)
    result, thread = got[0]
    assert thread == "scellis-worker" and future.result(5) is result
    np.testing.assert_array_equal(result["values"], [0, 60, 120])

    failed = threading.Event()
    g.submit(got.append, on_error=lambda e: (errors.append(e), failed.set()), backend="cpu",
             values=values)
    assert failed.wait(30)
    assert errors[0].code == "missing-determinism-tier" and len(got) == 1


def test_a_closed_worker_never_calls_back():
    w = Worker()
    started, release, called = threading.Event(), threading.Event(), []

    def job():
        started.set()
        release.wait(10)
        return "late"

    future = w.post(job, called.append)
    assert started.wait(10)
    w.close(wait=False)
    release.set()
    w._thread.join(10)
    assert called == [] and future.exception(5).code == "worker-closed"
    with pytest.raises(scellis.SessionStateError) as e:
        w.post(job, called.append)
    assert e.value.code == "worker-closed"


def test_a_submit_after_shutdown_starts_a_fresh_worker():
    g, values = seed_graph()
    scellis.shutdown()
    done = threading.Event()
    g.submit(lambda r: done.set(), backend="cpu", tier="prod", values=values)
    assert done.wait(30)


def test_lowering_rungs_and_the_plan_are_the_engines():
    g = scellis.Graph()
    x = g.input("x", np.ones((4, 3), np.float32))
    w = g.param("w", shape=(3, 2), init="kaiming_uniform", seed=7)
    y = (x @ w).relu()
    webir = g.lower("webir", tier="prod", y=y)
    assert "matmul" in webir and "relu" in webir and "shape [4, 2]" in webir
    plan = g.plan(tier="prod", y=y)
    assert "verdict" in plan and "green" in plan
    assert json.loads(g.plan(tier="prod", json=True, y=y))
    with pytest.raises(scellis.GraphError) as e:
        g.lower("assembly", tier="prod", y=y)
    assert e.value.code == "bad-rung"


def test_submissions_and_runs_on_the_calling_thread_overlap_and_agree(rng):
    x = rng.uniform(-1, 1, size=(32, 32)).astype(np.float32)
    g = scellis.Graph()
    t = g.input("x", x)
    y = (t @ t).tanh()
    want = np.tanh(x.astype(np.float64) @ x.astype(np.float64))
    futures = [g.submit(lambda r: None, backend="cpu", tier="prod", y=y) for _ in range(4)]
    here = [g.run(backend="cpu", tier="prod", y=y)["y"] for _ in range(4)]
    there = [f.result(60)["y"] for f in futures]
    for got in here + there:
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        np.testing.assert_array_equal(got, here[0])  # the CPU reference is deterministic
