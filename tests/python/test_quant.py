"""matmul_q: a linear layer whose weight is a checkpoint's q4_k or q6_k blocks, decoded inside the
product. The blocks travel as inline document data (their bytes) through the engine binding; the
activations are fed. Expected values come from the gguf package's own dequantizer, independent
of Scellis."""
import json

import numpy as np
import pytest
from gguf import GGMLQuantizationType
from gguf.quants import dequantize

from scellis import _scellis

QTYPES = {"q4_k": GGMLQuantizationType.Q4_K, "q6_k": GGMLQuantizationType.Q6_K}
BLOCK_BYTES = {"q4_k": 144, "q6_k": 210}
# Byte offsets of each block's f16 fields: d and dmin (q4_k), d (q6_k).
HALF_FIELDS = {"q4_k": (0, 2), "q6_k": (208,)}


def run_matmul_q(backend, a, blocks, dtype, n, k):
    """out = a @ dequantize(blocks)^T on `backend`; blocks: the uint8 bytes of n rows of k values."""
    doc = {"version": 2, "nodes": [
        {"id": 0, "op": "input", "name": "a", "shape": list(a.shape)},
        {"id": 1, "op": "input", "name": "w", "shape": [n, k], "dtype": dtype,
         "data": blocks.reshape(-1).tolist()},
        {"id": 2, "op": "matmul_q", "a": 0, "b": 1}],
        "outputs": [{"name": "out", "id": 2}]}
    report = _scellis.run(json.dumps(doc), backend["backend"], "prod",
                          backend.get("allow_software_adapter", False), 0,
                          {"a": np.ascontiguousarray(a, dtype=np.float32)})
    return report["outputs"]["out"]


def random_blocks(rng, dtype, rows, blocks_per_row):
    """Random bytes whose f16 fields are finite: random bits of every finite half (zeros,
    subnormals, negatives, up to 65504)."""
    data = rng.integers(0, 256, size=(rows * blocks_per_row, BLOCK_BYTES[dtype]), dtype=np.uint8)
    for at in HALF_FIELDS[dtype]:
        bits = rng.integers(0, 1 << 16, size=rows * blocks_per_row, dtype=np.uint32)
        exponent_max = (bits >> 10) & 0x1F == 0x1F
        bits[exponent_max] &= ~np.uint32(0x4000)  # exponent 31 (inf, NaN) becomes 15
        data[:, at:at + 2] = bits.astype(np.uint16).view(np.uint8).reshape(-1, 2)
    return data.reshape(rows, blocks_per_row * BLOCK_BYTES[dtype])


@pytest.mark.parametrize("dtype", sorted(QTYPES))
def test_decoded_weights_equal_the_gguf_dequantizer_bit_for_bit(backend, rng, dtype):
    # a = I makes out[k, n] = 1 * w[n, k] plus exact zeros (0 * w), so out^T is the decoded
    # weight. Compared bit for bit wherever the weight is non-zero; a zero weight is compared as
    # a value, since adding the other products' zeros may turn -0 into +0.
    n, k = 8, 512
    blocks = random_blocks(rng, dtype, n, k // 256)
    want = dequantize(blocks, QTYPES[dtype]).reshape(n, k)
    assert np.isfinite(want).all()
    got = run_matmul_q(backend, np.eye(k, dtype=np.float32), blocks, dtype, n, k).T
    assert got.dtype == np.float32 and got.shape == (n, k)
    nonzero = want != 0
    mismatch = np.argwhere(got.view(np.uint32)[nonzero] != want.view(np.uint32)[nonzero])
    assert mismatch.size == 0, f"first decoded weight differing: {got[nonzero][mismatch[0]]}"
    assert (got[~nonzero] == 0).all()


def quantize_q4_k(w):
    """A plain q4_k quantizer (not ggml's search): per 32-value sub-block, its range over 15
    steps above its minimum, the scales and minimums in 6 bits relative to the block's f16 d and
    dmin. Rows of w must hold whole blocks of 256."""
    rows, k = w.shape
    sub = w.reshape(-1, 8, 32).astype(np.float64)
    lo = np.minimum(sub.min(axis=2), 0.0)
    step = (sub.max(axis=2) - lo) / 15.0
    d = (step.max(axis=1) / 63.0).astype(np.float16)
    dmin = ((-lo).max(axis=1) / 63.0).astype(np.float16)
    safe = lambda v: np.where(v == 0, 1.0, v)  # noqa: E731
    sc = np.clip(np.rint(step / safe(d.astype(np.float64))[:, None]), 0, 63).astype(np.uint8)
    m = np.clip(np.rint(-lo / safe(dmin.astype(np.float64))[:, None]), 0, 63).astype(np.uint8)
    scale = d.astype(np.float64)[:, None] * sc
    offset = dmin.astype(np.float64)[:, None] * m
    q = np.clip(np.rint((sub + offset[:, :, None]) / safe(scale)[:, :, None]), 0, 15)
    q = q.astype(np.uint8)
    scales = np.zeros((sub.shape[0], 12), dtype=np.uint8)
    scales[:, 0:4] = (sc[:, :4] & 63) | ((sc[:, 4:] >> 4) << 6)
    scales[:, 4:8] = (m[:, :4] & 63) | ((m[:, 4:] >> 4) << 6)
    scales[:, 8:12] = (sc[:, 4:] & 15) | ((m[:, 4:] & 15) << 4)
    qs = (q[:, 0::2, :] | (q[:, 1::2, :] << 4)).reshape(-1, 128)
    blocks = np.concatenate([d.reshape(-1, 1).view(np.uint8), dmin.reshape(-1, 1).view(np.uint8),
                             scales, qs], axis=1)
    return blocks.reshape(rows, -1)


def test_a_q4_k_linear_layer_matches_dequantize_then_matmul_in_float64(backend, rng):
    n, k, m = 24, 768, 5
    w = rng.normal(0.0, 0.05, size=(n, k)).astype(np.float32)
    blocks = quantize_q4_k(w)
    assert blocks.shape == (n, k // 256 * 144)
    w_q = dequantize(blocks, GGMLQuantizationType.Q4_K).reshape(n, k).astype(np.float64)
    # The quantizer's blocks read back as w within its steps (a check of the packing).
    assert np.abs(w_q - w).max() < 0.02
    x = rng.uniform(-2.0, 2.0, size=(m, k)).astype(np.float32)
    got = run_matmul_q(backend, x, blocks, "q4_k", n, k).astype(np.float64)
    want = x.astype(np.float64) @ w_q.T
    # A sum of k products accumulated in f32 (each product and each sum rounded once) is within
    # gamma_k = k u / (1 - k u) of the exact sum, relative to the sum of |products|, u = 2^-24.
    u = 2.0 ** -24
    bound = k * u / (1 - k * u) * (np.abs(x.astype(np.float64)) @ np.abs(w_q).T)
    assert (np.abs(got - want) <= bound).all(), np.max(np.abs(got - want) / bound)
    assert np.abs(got - want).max() > 0  # the check measures f32 rounding, not a float64 copy
