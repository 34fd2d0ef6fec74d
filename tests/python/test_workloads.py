"""Seed 002's workloads (bench/pipelines/workloads.py, the documents of examples/pipelines at a
small size) against their float64 NumPy oracles on both backends: each is one repeated graph, run
fused in one submission on WebGPU; the sorts (bitonic sort, top-k, compaction) are one unrolled
graph of distinct stages, also one submission, checked exactly."""
import json
import pathlib
import sys

import numpy as np
import pytest

from scellis import _scellis

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench" / "pipelines"))
import workloads  # noqa: E402

# (size, iterations): 23² grids for 30 iterations; the tree sums 2^10 values in its 10 levels;
# the Walsh-Hadamard filter needs a power of 2; Canny's shapes need room for a few pixels each.
SMALL = {name: (23, 30) for name in workloads.BUILDERS} | {"tree_sum": (2**10, 10),
                                                          "spectral": (32, 30),
                                                          "canny": (40, 30),
                                                          "path_tracer": (12, 4)}
SMALL |= {name: (2**10, 1) for name in workloads.SORTS}
REPEATED = sorted(set(workloads.BUILDERS) - workloads.SORTS)

# Dispatches of each sort of 2^10 keys: the 55 stages of the bitonic network (a kernel each
# unblocked) are one kernel of stages (block-butterfly-stages: every partner lies in a tile of
# 1024), top-k adds the slice of the last k; compaction's key-value stages (the keys, then the
# values, two kernels a stage unblocked) are one too, with the mask as f32 beside them, then its
# sum.
SORT_DISPATCHES = {"bitonic_sort": 1, "top_k": 2, "compaction": 2}

# Kernels in one iteration of each loop body, as `scellis lower --to=kernel` lists them: a value
# read by one consumer fuses into it, shifts included. Gray-Scott has two fields (u·v² recomputed
# in each); each Ising half-sweep is one kernel (its draw a step of the update: fuse-generators),
# plus the sweep counter's increment; the spectral filter's is its four matmuls, the gains'
# product between them the epilogue of the matmul before it; Canny's is the hysteresis. The tree
# has no loop: its 10 levels are a reshape into pairs (layout ops are kernels of their own) and
# their sum each. A path tracer's sample is 132: a kernel for every value several others read
# (each ray's origin and direction, each candidate hit's distance, the nearest so far, the hit's
# id, the throughput, ...), the rest fused into them, its 6 draws steps of their readers.
KERNELS_PER_ITERATION = {"jacobi": 1, "heat": 1, "life": 1, "sobel": 1, "wavefront": 1,
                         "gray_scott": 2, "ising": 3, "tree_sum": 20, "spectral": 4, "canny": 1,
                         "path_tracer": 132}
# Kernels hoisted out of the loop (they read nothing carried), run once per run: the spectral
# filter's Walsh-Hadamard matrix (read by four matmuls); Canny's image, its two blur passes, the
# two Sobel gradients, the magnitude and the suppressed magnitude.
HOISTED = {"spectral": 1, "canny": 7}


@pytest.mark.parametrize("name", REPEATED)
def test_workload_matches_its_oracle(name, backend, rng):
    size, iterations = SMALL[name]
    doc = workloads.document(name, size, iterations)
    state, constants = workloads.initial_state(name, size, int(rng.integers(2**31)))
    initial = dict(zip(workloads.STATE[name], state)) | constants
    session = _scellis.prepare(json.dumps(doc), backend["backend"], None,
                               backend.get("allow_software_adapter", False), 2, initial)
    outputs = workloads.outputs(name)
    watched, stats = session.run([{}], outputs)
    loop = doc.get("repeat", 1)
    want = workloads.oracle(name, state, constants, loop)
    for output, expected in zip(outputs, want):
        got = watched[output][0]
        if name == "canny":
            check = workloads.canny_check(got, constants["noise"], loop)
            assert check["within_bounds"], check
            assert check["edge_cells"] > 0
        elif name == "path_tracer":
            pass  # every output at once, below
        elif name in workloads.EXACT:
            np.testing.assert_array_equal(got, expected)
        else:
            np.testing.assert_allclose(got, expected, rtol=0, atol=1e-4 * np.abs(expected).max())
    if name == "path_tracer":
        # Up to the samples whose path met a near tie or is ill-conditioned (path_tracer.py):
        # about 0.6% of them (at most 10 of these 576 in 300 draws of the starting counter).
        check = workloads.path_tracer_check([watched[o][0] for o in outputs], state, loop)
        assert check["within_bounds"], check
        assert check["ambiguous_samples"] <= 0.05 * size * size * loop, check
    if name == "tree_sum":
        # Each level's pair sums rounded to f32, as NumPy's f32 additions give them: bit for bit.
        x = state[0]
        while x.size > 1:
            x = x[0::2] + x[1::2]
        np.testing.assert_array_equal(watched["sum"][0], x)
    if backend["backend"] == "webgpu":
        # Fused: every iteration in one submission. A one-kernel stencil body is temporally
        # blocked (30 iterations: 6 per dispatch, the most from 2 to 8 that divide 30); a body of
        # several kernels runs one dispatch per kernel per iteration; hoisted kernels run once.
        assert session.executor == "fused-encoder"
        assert stats["submissions"] == 1
        kernels = KERNELS_PER_ITERATION[name]
        blocked = kernels == 1
        assert stats["iterations_per_dispatch"] == (6 if blocked else 1)
        body = loop // 6 if blocked else kernels * loop
        assert stats["dispatches"] == HOISTED.get(name, 0) + body
    session.dispose()


@pytest.mark.parametrize("name", sorted(workloads.BUILDERS))
def test_the_generic_executor_gives_the_fused_answer(name, rng):
    """A submission per dispatch round instead of one in all: the same kernels, the same bits."""
    size, iterations = SMALL[name]
    loop = workloads.document(name, size, iterations).get("repeat", 1)
    doc = json.dumps(workloads.document(name, size, iterations))
    state, constants = workloads.initial_state(name, size, int(rng.integers(2**31)))
    initial = dict(zip(workloads.STATE[name], state)) | constants
    outputs = workloads.outputs(name)
    answers = {}
    for executor in ("fused-encoder", "generic"):
        session = _scellis.prepare(doc, "webgpu", None, True, 2, initial, executor)
        assert session.executor == executor
        watched, stats = session.run([{}], outputs)
        answers[executor] = [watched[o][0] for o in outputs]
        session.dispose()
    # One submission per round of the loop (an unrolled graph, the tree's or a sort's, is one
    # round).
    assert stats["submissions"] == loop // stats["iterations_per_dispatch"]
    for fused, generic in zip(answers["fused-encoder"], answers["generic"]):
        np.testing.assert_array_equal(generic, fused)


@pytest.mark.parametrize("name", sorted(workloads.SORTS))
def test_sort_matches_its_oracle_exactly(name, backend, rng):
    """np.sort, its last k, boolean indexing: the engine's keys and moved values bit for bit, in
    one submission of a dispatch per kernel on WebGPU."""
    size, _ = SMALL[name]
    doc = workloads.document(name, size, 1)
    assert "repeat" not in doc, "the stages differ: the graph is unrolled"
    state, _ = workloads.initial_state(name, size, int(rng.integers(2**31)))
    session = _scellis.prepare(json.dumps(doc), backend["backend"], None,
                               backend.get("allow_software_adapter", False), 2,
                               dict(zip(workloads.STATE[name], state)))
    outputs = workloads.outputs(name)
    watched, stats = session.run([{}], outputs)
    for output, expected in zip(outputs, workloads.oracle(name, state, {}, 1)):
        np.testing.assert_array_equal(watched[output][0], expected, err_msg=output)
    if backend["backend"] == "webgpu":
        assert session.executor == "fused-encoder"
        assert stats["submissions"] == 1
        assert stats["dispatches"] == SORT_DISPATCHES[name]
    session.dispose()


def test_the_oracles_know_their_answers():
    """The oracles' own checks, independent of the engine: the tree's last level holds the sum;
    the finished wavefront is the path DP computed row by row; the hash is docs/ops.md's."""
    rng = np.random.default_rng(7)
    (x,), _ = workloads.initial_state("tree_sum", 2**10, 7)
    (tree,) = workloads.oracle("tree_sum", [x], {}, 1)
    assert tree.shape == (1,)
    assert tree[0] == sum(map(float, x))  # exact: Python's float64 sum, term by term
    # Canny without noise on 40 x 40: the disc (centre (14, 16), radius 9) has its border found
    # where it crosses row 14 on the right (column 25) and nothing at its flat centre or in the
    # empty corner; the answer with every cell flipped is outside the bounds.
    assert workloads.canny_shapes(40)[0] == (14, 16, 9)
    quiet = np.zeros((40, 40), np.float32)
    edges = workloads.canny_edges(quiet, 30)
    assert edges[14, 16] == 0 and edges[0, 39] == 0
    assert edges[12:17, 23:28].any()
    check = workloads.canny_check(edges, quiet, 30)
    assert check["within_bounds"] and check["differing_cells"] == 0
    assert not workloads.canny_check(1 - edges, quiet, 30)["within_bounds"]
    cost = rng.random((6, 6))
    (done,) = workloads.oracle("wavefront", [np.full((6, 6), -1.0)], {"cost": cost}, 11)
    rows = np.zeros((7, 7))
    for i in range(6):
        for j in range(6):
            rows[i + 1, j + 1] = cost[i, j] + max(rows[i, j + 1], rows[i + 1, j])
    np.testing.assert_array_equal(done, rows[1:, 1:])
    # The fast Walsh-Hadamard transform is Sylvester's matrix; its rows' sequencies are 0..n-1.
    sylvester = np.ones((1, 1))
    while len(sylvester) < 16:
        sylvester = np.block([[sylvester, sylvester], [sylvester, -sylvester]])
    np.testing.assert_array_equal(workloads._walsh_hadamard(np.eye(16)), sylvester)
    assert sorted(workloads.walsh_sequency(16)) == list(range(16))

    # The path tracer: the graph's Taylor polynomials are sin and cos within 6e-8 on
    # [-pi/2, pi/2]; rays whose nearest hits are worked by hand (the eye at (0, 1, 4.5), the red
    # sphere's front at z = 1 (level with the eye: d_y = 0 is the ground's threshold, a tie), the
    # ground 1 below the eye, the blue sphere and the light at their centres' distances less their
    # radii); a sum off by half a sample's worth where nothing was near a tie fails the check.
    tracer = workloads.tracer
    alpha = np.linspace(-np.pi / 2, np.pi / 2, 10001)
    assert np.abs(alpha * tracer.horner(tracer.SIN_TAYLOR, alpha**2) - np.sin(alpha)).max() < 6e-8
    assert np.abs(tracer.horner(tracer.COS_TAYLOR, alpha**2) - np.cos(alpha)).max() < 6e-8
    eye = [np.array(e) for e in tracer.EYE]
    blue = np.subtract(tracer.SPHERES[1][0], tracer.EYE)  # (-1.7, -0.3, -4.3)
    light = np.subtract(tracer.SPHERES[2][0], tracer.EYE)  # (1.5, -0.5, -3.5)
    for direction, (t, hit, near_tie) in [
            ((0.0, 0.0, -1.0), (3.5, 1, True)), ((0.0, -1.0, 0.0), (1.0, 0, False)),
            ((0.0, 1.0, 0.0), (tracer.FAR, -1, False)),
            (blue / np.sqrt(21.47), (np.sqrt(21.47) - 0.7, 2, False)),
            (light / np.sqrt(14.75), (np.sqrt(14.75) - 0.5, 3, False))]:
        got_t, got_hit, tie = tracer.nearest(eye, [np.array(x) for x in direction])
        assert got_hit == hit and tie == near_tie, direction
        np.testing.assert_allclose(got_t, t, rtol=1e-12)
    state, _ = workloads.initial_state("path_tracer", 8, 7)
    want, ambiguous = workloads.path_tracer_render(state, 3)
    assert workloads.path_tracer_check(want, state, 3)["within_bounds"]
    calm = np.argwhere(ambiguous == 0)[0]
    off = [w.copy() for w in want]
    off[1][tuple(calm)] += 0.5
    assert not workloads.path_tracer_check(off, state, 3)["within_bounds"]

    # uniform(0, 0, i) for i = 0..3, the hash worked by hand in Python integers.
    def h(v):
        s = (v * 747796405 + 2891336453) % 2**32
        w = (((s >> ((s >> 28) + 4)) ^ s) * 277803737) % 2**32
        return (w >> 22) ^ w
    want = [(h(h(i) ^ h(0 ^ h(0))) >> 8) / 2**24 for i in range(4)]
    np.testing.assert_array_equal(workloads.counter_uniform(0, 0, (4,)), want)


def test_the_shipped_documents_are_the_full_size_workloads():
    root = pathlib.Path(__file__).resolve().parents[2] / "examples" / "pipelines"
    for name, (n, iterations) in workloads.FULL.items():
        shipped = json.loads((root / f"{name}.json").read_text())
        assert shipped == workloads.document(name, n, iterations), name
