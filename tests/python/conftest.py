"""Shared fixtures of the Python package's tests: the two backends every computation is checked
on (the CPU reference, and WebGPU through Dawn on SwiftShader, the software adapter allowed
explicitly), and fresh seeded random inputs whose seed is printed with any failure."""
import os
import secrets

import numpy as np
import pytest

# GPU paths run on SwiftShader, which Debian's chromium ships; set before Dawn is first loaded.
os.environ.setdefault("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json")

import scellis  # noqa: E402

BACKENDS = {
    "cpu": {"backend": "cpu"},
    "webgpu": {"backend": "webgpu", "allow_software_adapter": True},
}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request):
    """Keyword arguments of run/prepare selecting one backend explicitly."""
    return dict(BACKENDS[request.param])


@pytest.fixture
def rng():
    seed = secrets.randbits(32)
    print(f"random seed: {seed}")  # shown by pytest when the test fails
    return np.random.default_rng(seed)


def f32(rng, *shape, low=-2.0, high=2.0):
    return rng.uniform(low, high, size=shape).astype(np.float32)
