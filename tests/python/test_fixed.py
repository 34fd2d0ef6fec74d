"""matmul_fixed: a product of i32 fixed-point values accumulated in integers, the same bits on
the CPU reference and on WebGPU (SwiftShader). Expected values are Python integers: the exact sum
of products, shifted right by frac_bits and rounded half to even."""
import json

import numpy as np
import pytest

import scellis
from scellis import _scellis


def fixed_product(a, b, frac_bits):
    """round_half_even((a @ b) / 2^frac_bits) in Python integers."""
    m, k = a.shape
    n = b.shape[1]
    out = np.zeros((m, n), dtype=np.int64)
    for i in range(m):
        for j in range(n):
            s = sum(int(a[i, t]) * int(b[t, j]) for t in range(k))
            q = s >> frac_bits  # floor
            r = s - (q << frac_bits)
            if frac_bits and (2 * r > (1 << frac_bits) or (2 * r == (1 << frac_bits) and q & 1)):
                q += 1
            out[i, j] = q
    return out


def product_graph(a, b, frac_bits):
    g = scellis.Graph()
    out = g.matmul_fixed(g.input("a", a, dtype="i32"), g.input("b", b, dtype="i32"), frac_bits)
    return g, out


@pytest.mark.parametrize("frac_bits,k,magnitude", [(0, 7, 1 << 14), (1, 37, 1 << 13),
                                                   (16, 200, 1 << 18), (31, 64, 1 << 27)])
def test_random_products_equal_python_integers_bit_for_bit(backend, rng, frac_bits, k, magnitude):
    a = rng.integers(-magnitude, magnitude + 1, size=(5, k), dtype=np.int32)
    b = rng.integers(-magnitude, magnitude + 1, size=(k, 6), dtype=np.int32)
    want = fixed_product(a, b, frac_bits)
    assert np.abs(want).max() < 2 ** 31
    g, out = product_graph(a, b, frac_bits)
    got = g.run(**backend, tier="prod", out=out)["out"]
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


def test_halves_round_to_even_and_the_extremes_are_exact(backend):
    # Hand-worked, frac_bits 1: 3/2 = 1.5 -> 2, 5/2 = 2.5 -> 2, -3/2 -> -2, -5/2 -> -2, 7/2 -> 4,
    # (2^31 - 1)/2 -> 2^30 (a tie, to even), -2^31/2 = -2^30 exactly.
    a = np.array([[3, 0], [5, 0], [-3, 0], [-5, 0], [7, 0], [2 ** 31 - 1, 0], [-2 ** 31, 0]],
                 dtype=np.int32)
    b = np.array([[1], [0]], dtype=np.int32)
    g, out = product_graph(a, b, 1)
    got = g.run(**backend, tier="prod", out=out)["out"]
    np.testing.assert_array_equal(got.reshape(-1), [2, 2, -2, -2, 4, 2 ** 30, -2 ** 30])


def test_an_overflow_of_fed_operands_is_a_run_time_error_naming_the_position(backend):
    a = np.array([[1, 1], [2 ** 30, 2 ** 30]], dtype=np.int32)
    b = np.array([[1], [1]], dtype=np.int32)
    g, out = product_graph(a, b, 0)  # row 1: 2^31, one past the largest i32
    with pytest.raises(scellis.ScellisError) as e:
        g.run(**backend, tier="prod", out=out)
    assert e.value.code == "fixed-point-overflow"
    assert not isinstance(e.value, scellis.GraphError)  # a run-time error
    assert "[1, 0]" in e.value.message


def test_an_overflow_of_inline_operands_is_refused_when_the_plan_is_made(backend):
    a = np.array([[-2 ** 31, -2 ** 31]], dtype=np.int32)
    b = np.array([[1], [0]], dtype=np.int32)
    g, out = product_graph(a, b, 0)
    assert g.run(**backend, tier="prod", out=out)["out"].tolist() == [[-2 ** 31]]
    g2, out2 = product_graph(a, np.array([[1], [1]], dtype=np.int32), 0)
    with pytest.raises(scellis.GraphError) as e:
        _scellis.run(g2.to_json(out=out2), backend["backend"], "prod",
                     backend.get("allow_software_adapter", False), 0, {})
    assert e.value.code == "fixed-point-overflow"
    assert e.value.pointer == "/nodes/2"
    assert "[0, 0]" in e.value.message
