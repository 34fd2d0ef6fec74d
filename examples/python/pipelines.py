"""Seed 002's stencil workloads written as ordinary Python loops, traced once by
@scellis.pipeline into repeated graphs: Jacobi sweeps, heat diffusion and Gray-Scott, each checked
against a float64 NumPy loop, with where it ran and how many submissions it took.

    .venv/bin/python examples/python/pipelines.py [--size 64] [--iterations 100]
        [--backend auto|cpu|webgpu] [--allow-software-adapter]
"""
import argparse
import time

import numpy as np

import scellis

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--size", type=int, default=64)
p.add_argument("--iterations", type=int, default=100)
p.add_argument("--backend", default="auto")
p.add_argument("--allow-software-adapter", action="store_true")
a = p.parse_args()
options = {"tier": "prod", "backend": a.backend, "allow_software_adapter": a.allow_software_adapter}
N = a.iterations
ALPHA, DU, DV, F, K = 0.2, 0.16, 0.08, 0.035, 0.065


def neighbours(u, boundary):
    return (u.shift([1, 0], boundary) + u.shift([-1, 0], boundary) + u.shift([0, 1], boundary)
            + u.shift([0, -1], boundary))


@scellis.pipeline(**options)
def jacobi(u, q):
    for _ in range(N):
        u = (neighbours(u, "zero") + q) * 0.25
    return u


@scellis.pipeline(**options)
def heat(u):
    for _ in range(N):
        u = u + (neighbours(u, "zero") - u * 4.0) * ALPHA
    return u


@scellis.pipeline(**options)
def gray_scott(u, v):
    for _ in range(N):
        uvv = u * v * v
        u, v = (u + (neighbours(u, "wrap") - u * 4.0) * DU - uvv + (u * -1.0 + 1.0) * F,
                v + (neighbours(v, "wrap") - v * 4.0) * DV + uvv - v * (F + K))
    return u, v


# ---- float64 NumPy oracles, from the equations ----

def zero_nb(u):
    p = np.pad(u, 1)
    return p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:]


def wrap_nb(u):
    return np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1)


def jacobi_f64(u, q):
    for _ in range(N):
        u = (zero_nb(u) + q) / 4
    return u


def heat_f64(u):
    for _ in range(N):
        u = u + ALPHA * (zero_nb(u) - 4 * u)
    return u


def gray_scott_f64(u, v):
    for _ in range(N):
        uvv = u * v * v
        u, v = (u + DU * (wrap_nb(u) - 4 * u) - uvv + F * (1 - u),
                v + DV * (wrap_nb(v) - 4 * v) + uvv - (F + K) * v)
    return u, v


rng = np.random.default_rng(0)
n = a.size
field = rng.random((n, n), np.float32)
u_gs = (0.9 + 0.1 * rng.random((n, n))).astype(np.float32)
v_gs = (0.1 * rng.random((n, n))).astype(np.float32)
runs = [("jacobi", jacobi, (np.zeros((n, n), np.float32), field), jacobi_f64),
        ("heat", heat, (field,), heat_f64),
        ("gray_scott", gray_scott, (u_gs, v_gs), gray_scott_f64)]
for name, pipeline, args, oracle in runs:
    traced = pipeline.trace(*args)
    result = pipeline.run(*args)  # prepares the session
    start = time.perf_counter()
    result = pipeline.run(*args)
    elapsed = time.perf_counter() - start
    want = oracle(*[x.astype(np.float64) for x in args])
    want = want if isinstance(want, tuple) else (want,)
    error = max(float(np.abs(result.outputs[o] - w).max()) for o, w in zip(traced.outputs, want))
    print(f"{name}: {n}x{n} x {N}: repeat {traced.repeat}, {len(traced.doc['nodes'])} nodes | "
          f"{result.backend} {result.executor} | fallback: {result.fallback_reason} | "
          f"submissions {result.stats.get('submissions')}, dispatches "
          f"{result.stats.get('dispatches', '-')} | max |scellis - float64| = {error:.3g} | "
          f"{elapsed * 1e3:.2f} ms per call")
