"""Seed 002's workloads (bench/pipelines/workloads.py, the documents of examples/pipelines at a
small size) against their float64 NumPy oracles on both backends: each is one repeated graph, run
fused in one submission on WebGPU."""
import json
import pathlib
import sys

import numpy as np
import pytest

from scellis import _scellis

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench" / "pipelines"))
import workloads  # noqa: E402

SIZE, ITERATIONS = 23, 30


@pytest.mark.parametrize("name", sorted(workloads.BUILDERS))
def test_workload_matches_its_oracle(name, backend, rng):
    doc = workloads.document(name, SIZE, ITERATIONS)
    state, constants = workloads.initial_state(name, SIZE, int(rng.integers(2**31)))
    initial = dict(zip(workloads.STATE[name], state)) | constants
    session = _scellis.prepare(json.dumps(doc), backend["backend"], None,
                               backend.get("allow_software_adapter", False), 2, initial)
    outputs = [workloads.OUTPUT_OF[s] for s in workloads.STATE[name]]
    watched, stats = session.run([{}], outputs)
    want = workloads.oracle(name, state, constants, ITERATIONS)
    for output, expected in zip(outputs, want):
        got = watched[output][0]
        if name == "life":
            np.testing.assert_array_equal(got, expected)
        else:
            np.testing.assert_allclose(got, expected, rtol=0, atol=1e-4 * np.abs(expected).max())
    if backend["backend"] == "webgpu":
        # Fused: every iteration in one submission. A one-kernel stencil body is temporally
        # blocked (30 iterations: 6 per dispatch, the most from 2 to 8 that divide 30); Gray-Scott's
        # two-kernel body (u·v² recomputed in each) runs one dispatch per kernel per iteration.
        assert session.executor == "fused-encoder"
        assert stats["submissions"] == 1
        blocked = name != "gray_scott"
        assert stats["iterations_per_dispatch"] == (6 if blocked else 1)
        assert stats["dispatches"] == (ITERATIONS // 6 if blocked else 2 * ITERATIONS)
    session.dispose()


def test_the_shipped_documents_are_the_full_size_workloads():
    root = pathlib.Path(__file__).resolve().parents[2] / "examples" / "pipelines"
    for name, (n, iterations) in workloads.FULL.items():
        shipped = json.loads((root / f"{name}.json").read_text())
        assert shipped == workloads.document(name, n, iterations), name
