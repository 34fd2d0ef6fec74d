"""Run records from Python and user ops in pipelines. A pipeline calling a user op with a NumPy
reference (scellis.define_op) runs it in every engine call it makes — its prepared session, its
prologue, its one-shot run — against a float64 NumPy computation on the CPU reference and on
SwiftShader. A one-shot run leaves a record as `scellis run` does (record=False and
SCELLIS_NO_RECORD=1 leave none); scellis.runs lists it and scellis.replay replays it. A record of
a run that used a user op replays only with the op supplied: without it, or with another version
or WGSL, the replay is refused by name (from Python and from the built `scellis` command) and the
reference never runs. Each test has a store of its own."""
import os
import subprocess

import numpy as np
import pytest

import scellis
from conftest import f32
from test_user_ops import WGSL, define, looped_stencil

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCELLIS = os.path.join(os.environ.get("SCELLIS_BUILD", os.path.join(ROOT, "build")), "scellis")


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A store of the test's own, recording on."""
    path = str(tmp_path / "store")
    monkeypatch.setenv("SCELLIS_STORE", path)
    monkeypatch.delenv("SCELLIS_NO_RECORD", raising=False)
    return path


def counted(calls):
    """The stencil op with a reference that counts its calls."""
    def reference(u, w):
        calls.append(u.shape)
        p = np.pad(u.astype(np.float64), 1)
        return 0.25 * (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:]) + w
    return define(reference=reference)


def test_a_pipeline_calls_a_user_op_once_and_in_a_loop(backend, rng, store):
    op = define()

    @scellis.pipeline(tier="prod", **backend)
    def once(u, w):
        return op(u, w)

    @scellis.pipeline(tier="prod", **backend)
    def looped(u, w):
        v = u * 0.5  # a computed starting value: the prologue runs the op's graph too
        for _ in range(4):
            v = op(v, w)
        return v

    for _ in range(2):  # the second call steps the prepared sessions again
        u, w = f32(rng, 6, 9), f32(rng, 6, 9)
        np.testing.assert_allclose(once(u, w), looped_stencil(u, w), rtol=0, atol=1e-5)
        want = u.astype(np.float64) * 0.5
        for _ in range(4):
            want = looped_stencil(want, w)
        np.testing.assert_allclose(looped(u, w), want, rtol=0, atol=1e-5)
    assert looped.run(u, w).backend == backend["backend"]
    assert looped.trace(u, w).repeat == 4 and looped.traces == 1
    assert looped.trace(u, w).prologue is not None


def test_a_pipelines_one_shot_run_gives_the_op_and_chains_its_errors(rng, store):
    op = define()

    @scellis.pipeline(tier="prod", backend="cpu")
    def looped(u, w):
        for _ in range(3):
            u = op(u, w)
        return u

    # A carried infinity is a result for a pipeline: the call runs once more, one-shot.
    u, w = f32(rng, 5, 5), f32(rng, 5, 5)
    u[2, 2] = np.inf
    want = u.astype(np.float64)
    for _ in range(3):
        want = looped_stencil(want, w)
    r = looped.run(u, w)
    np.testing.assert_allclose(r.outputs["out"], want, rtol=0, atol=1e-5)
    assert r.run_id is not None

    def failing(u, w):
        raise ValueError("no stencil today")

    bad = define(reference=failing)

    @scellis.pipeline(tier="prod", backend="cpu")
    def broken(u, w):
        return bad(u, w)

    with pytest.raises(scellis.UserReferenceError) as e:
        broken(u, w)
    assert isinstance(e.value.__cause__, ValueError)


def test_a_run_is_recorded_listed_and_replayed(rng, store, monkeypatch):
    a = f32(rng, 3, 4)
    g = scellis.Graph()
    out = (g.input("a", a) * 2.0).relu()
    r = g.run(tier="prod", backend="cpu", out=out)
    np.testing.assert_array_equal(r.outputs["out"], np.maximum(a.astype(np.float64) * 2, 0))
    assert r.run_id and r.run_id.startswith("sha256:")
    listed = scellis.runs(limit=5)
    assert [x["run_id"] for x in listed] == [r.run_id]
    assert listed[0]["command"] == "run" and listed[0]["backend"] == "cpu"
    replay = scellis.replay(r.run_id)
    assert replay["agree"] and replay["guarantee"] == "bit-exact"
    assert [o["name"] for o in replay["outputs"]] == ["out"]
    assert replay["outputs"][0]["digest_equal"]

    assert g.run(tier="prod", backend="cpu", record=False, out=out).run_id is None
    monkeypatch.setenv("SCELLIS_NO_RECORD", "1")
    assert g.run(tier="prod", backend="cpu", out=out).run_id is None
    assert len(scellis.runs(limit=0)) == 1
    with pytest.raises(scellis.ReplayRefusedError) as e:
        scellis.replay("sha256:" + "0" * 64)
    assert e.value.code == "store-object-missing"


def test_a_record_of_a_user_op_replays_only_with_that_op(rng, store):
    calls = []
    op = counted(calls)
    u, w = f32(rng, 4, 7), f32(rng, 4, 7)
    g = scellis.Graph()
    out = op(g.input("u", u), w=g.input("w", w))
    run_id = g.run(tier="prod", backend="cpu", out=out).run_id
    assert run_id and len(calls) == 1

    replay = scellis.replay(run_id, ops=[op])
    assert replay["agree"] and replay["guarantee"] == "bit-exact"
    assert replay["outputs"][0]["digest_equal"] and len(calls) == 2

    del calls[:]
    with pytest.raises(scellis.ReplayRefusedError) as e:
        scellis.replay(run_id)
    assert e.value.code == "replay-needs-user-op" and '"stencil"' in e.value.message
    with pytest.raises(scellis.ReplayRefusedError) as e:
        scellis.replay(run_id, ops=[define(version="2")])
    assert e.value.code == "replay-user-op-mismatch" and "version" in e.value.message
    with pytest.raises(scellis.ReplayRefusedError) as e:
        scellis.replay(run_id, ops=[define(wgsl=WGSL.replace("0.25 * s", "0.5 * s"))])
    assert e.value.code == "replay-user-op-mismatch" and "WGSL" in e.value.message
    assert calls == []  # refused before anything ran

    if not os.path.exists(SCELLIS):
        pytest.skip(f"no built command at {SCELLIS}")
    cli = subprocess.run([SCELLIS, "replay", run_id], capture_output=True, text=True,
                         env={**os.environ, "SCELLIS_STORE": store}, timeout=60)
    assert cli.returncode == 2, cli.stderr
    assert "replay-needs-user-op" in cli.stderr and '"stencil"' in cli.stderr
    assert "scellis.replay(run_id, ops=[op])" in cli.stderr


def test_a_recorded_session_replays_every_step(backend, rng, store):
    """A least-squares regression trained in a prepared session with record=True: the record
    holds the initial weights and every step's batch (two of its runs in flight at once); dispose
    waits for the last and stores it; the replay prepares the
    session again and re-runs every step — bit for bit on the CPU reference, within the recorded
    tolerance on SwiftShader. Unrecorded sessions leave nothing."""
    from test_session import batches, prepare, reference
    import test_session

    w0 = f32(rng, test_session.D, 1)
    data = batches(rng, 5)
    g, x, y, w, loss, w_next = test_session.regression_graph(w0)
    s = g.prepare(feeds=[x, y], carry={w: w_next}, tier="prod", record=True, **backend, loss=loss)
    first = s.run({x: data[0][0], y: data[0][1]})["loss"]
    # Two runs in flight: the record takes each as it is finished, the last one by dispose.
    s.start([{x: a, y: b} for a, b in data[1:3]])
    s.start([{x: a, y: b} for a, b in data[3:]])
    rest = s.finish()["loss"]
    s.dispose()
    assert s.run_id and s.run_id.startswith("sha256:")
    want, _ = reference(w0, data)
    np.testing.assert_allclose(np.concatenate([[first], rest]), want[:3], rtol=1e-5, atol=1e-6)
    listed = scellis.runs(limit=5)
    assert [(x_["run_id"], x_["command"]) for x_ in listed] == [(s.run_id, "session")]
    replay = scellis.replay(s.run_id)
    assert replay["agree"], replay
    assert replay["guarantee"] == ("bit-exact" if backend["backend"] == "cpu" else "tolerance")
    assert len(replay["outputs"]) == 5  # the loss after each of the 5 steps
    assert replay["outputs"][4]["name"] == "run 3 step 2 loss"

    plain, *_ = prepare(backend, w0)
    plain.run({"x": data[0][0], "y": data[0][1]})
    plain.dispose()
    assert plain.run_id is None and plain.record() is None
    assert len(scellis.runs(limit=0)) == 1
