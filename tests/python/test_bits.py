"""The version-6 ops from Python: the bit operators of i32 and u32 tensors against NumPy with
torch's rules for shift counts outside [0, 32), Graph.arange against np.arange, Tensor.butterfly
against NumPy's fancy indexing, and a bitonic sort built from them against np.sort — each on the
CPU reference and on WebGPU (SwiftShader), exactly."""
import json

import numpy as np
import pytest

import scellis


def wrap_i32(v):
    """int64 values' low 32 bits as i32."""
    return (np.asarray(v, np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def torch_shift_left(a, b):
    """torch.bitwise_left_shift: 0 for a count outside [0, 32), else the bits that stay."""
    out = np.left_shift(a.astype(np.int64), np.clip(b, 0, 31).astype(np.int64)) & 0xFFFFFFFF
    out = np.where((b < 0) | (b >= 32), 0, out)
    return wrap_i32(out) if a.dtype == np.int32 else out.astype(np.uint32)


def torch_shift_right(a, b):
    """torch.bitwise_right_shift: arithmetic for i32 (a count outside [0, 32) fills with the
    sign), logical for u32 (0 past 31)."""
    shifted = np.right_shift(a, np.clip(b, 0, 31).astype(a.dtype))
    outside = (b < 0) | (b >= 32)
    return np.where(outside, a >> a.dtype.type(31) if a.dtype == np.int32 else 0,
                    shifted).astype(a.dtype)


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_bit_operators_match_numpy(backend, rng, dtype):
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, size=(5, 37), dtype=dtype, endpoint=True)
    b = rng.integers(info.min, info.max, size=(5, 37), dtype=dtype, endpoint=True)
    low = -40 if dtype == np.int32 else 0
    counts = rng.integers(low, 40, size=(5, 37)).astype(dtype)
    g = scellis.Graph()
    ta, tb, tn = g.input("a", a, dtype), g.input("b", b, dtype), g.input("n", counts, dtype)
    outs = {"and": ta & tb, "or": ta | tb, "xor": ta ^ tb, "and_scalar": ta & 12,
            "scalar_xor": 5 ^ ta, "left": ta << tn, "right": ta >> tn, "left_7": ta << 7}
    assert json.loads(g.to_json(**outs))["version"] == 6
    r = g.run(tier="prod", **backend, **outs)
    np.testing.assert_array_equal(r["and"], a & b)
    np.testing.assert_array_equal(r["or"], a | b)
    np.testing.assert_array_equal(r["xor"], a ^ b)
    np.testing.assert_array_equal(r["and_scalar"], a & dtype(12))
    np.testing.assert_array_equal(r["scalar_xor"], a ^ dtype(5))
    np.testing.assert_array_equal(r["left"], torch_shift_left(a, counts.astype(np.int64)))
    np.testing.assert_array_equal(r["right"], torch_shift_right(a, counts.astype(np.int64)))
    np.testing.assert_array_equal(r["left_7"], torch_shift_left(a, np.full(a.shape, 7)))


def test_arange_and_butterfly_match_numpy(backend, rng):
    x = rng.uniform(-2, 2, size=(3, 24)).astype(np.float32)
    g = scellis.Graph()
    t = g.input("x", x)
    y = rng.uniform(-2, 2, size=(4, 3)).astype(np.float32)
    u = g.input("y", y)
    outs = {"cols": g.arange([3, 24], axis=1), "rows": g.arange([3, 24], axis=0, dtype="u32"),
            "ramp_plus_x": t + g.arange([24], dtype="f32"), "partner": t.butterfly(5),
            "rows_swapped": u.butterfly(3, axis=0)}
    r = g.run(tier="prod", **backend, **outs)
    np.testing.assert_array_equal(r["cols"], np.broadcast_to(np.arange(24), (3, 24)))
    np.testing.assert_array_equal(r["rows"], np.broadcast_to(np.arange(3)[:, None], (3, 24)))
    np.testing.assert_array_equal(r["ramp_plus_x"], x + np.arange(24, dtype=np.float32))
    np.testing.assert_array_equal(r["partner"], x[:, np.arange(24) ^ 5])
    np.testing.assert_array_equal(r["rows_swapped"], y[np.arange(4) ^ 3])


def test_a_bitonic_sort_built_in_python_sorts(backend, rng):
    n = 64
    keys = rng.uniform(-1, 1, size=n).astype(np.float32)
    g = scellis.Graph()
    x = g.input("keys", keys)
    index = g.arange([n])
    k = 2
    while k <= n:
        j = k // 2
        while j >= 1:
            partner = x.butterfly(j)
            keep_smaller = (index & j).eq(0).eq((index & k).eq(0))
            x = g.where(keep_smaller, x.minimum(partner), x.maximum(partner))
            j //= 2
        k *= 2
    r = g.run(tier="prod", **backend, sorted=x)
    np.testing.assert_array_equal(r["sorted"], np.sort(keys))
