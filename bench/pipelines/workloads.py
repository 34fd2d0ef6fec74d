"""Seed 002's multi-pass workloads as Scellis documents, and their float64 NumPy oracles.

Each workload is one graph, run `repeat` times per step with its state carried between
iterations (graph protocol version 5), its neighbours read with `shift`: every iteration is one
fused kernel per field. The state starts from a counter-hash initializer, so a full-size document
holds no data; tests and benchmarks feed the initial state instead and run the oracle on it.

    python3 bench/pipelines/workloads.py   # rewrites examples/pipelines/*.json at full size
"""
import json
import pathlib

import numpy as np

# Full sizes: seed 002's suite.
FULL = {"jacobi": (1024, 512), "heat": (1024, 1024), "life": (1024, 1000),
        "gray_scott": (512, 768)}
HEAT_ALPHA = 0.2
GS_DU, GS_DV, GS_F, GS_K = 0.16, 0.08, 0.035, 0.065


class Doc:
    """A version-5 graph under construction: ids in order, outputs by name."""

    def __init__(self, repeat):
        self.nodes, self.outputs, self.repeat = [], [], repeat

    def add(self, op, **fields):
        self.nodes.append({"id": len(self.nodes), "op": op, **fields})
        return len(self.nodes) - 1

    def state(self, name, n, carry, init):
        return self.add("param", name=name, shape=[n, n], init=init, carry=carry)

    def const(self, value):
        return self.add("full", shape=[], value=value)

    def shift(self, a, dy, dx, boundary):
        return self.add("shift", a=a, shifts=[dy, dx], boundary=boundary)

    def neighbours(self, a, boundary):
        """The sum of the four edge neighbours, in a fixed order."""
        s = self.add("add", a=self.shift(a, 1, 0, boundary), b=self.shift(a, -1, 0, boundary))
        s = self.add("add", a=s, b=self.shift(a, 0, 1, boundary))
        return self.add("add", a=s, b=self.shift(a, 0, -1, boundary))

    def out(self, name, node):
        self.outputs.append({"name": name, "id": node})

    def json(self, name):
        return {"version": 5, "name": name, "determinism": "prod", "repeat": self.repeat,
                "nodes": self.nodes,
                "outputs": self.outputs}


def jacobi(n, sweeps):
    """Poisson's equation, zero boundary: u <- (neighbours(u) + q) / 4."""
    d = Doc(sweeps)
    u = d.state("u", n, "u_next", {"kind": "zeros"})
    q = d.add("param", name="q", shape=[n, n], init={"kind": "uniform", "low": 0, "high": 1,
                                                     "seed": 2})
    s = d.add("add", a=d.neighbours(u, "zero"), b=q)
    d.out("u_next", d.add("mul", a=s, b=d.const(0.25)))
    return d.json("jacobi")


def heat(n, steps):
    """Explicit heat diffusion, zero boundary: u <- u + alpha * (neighbours(u) - 4u)."""
    d = Doc(steps)
    u = d.state("u", n, "u_next", {"kind": "uniform", "low": 0, "high": 1, "seed": 3})
    lap = d.add("sub", a=d.neighbours(u, "zero"), b=d.add("mul", a=u, b=d.const(4.0)))
    d.out("u_next", d.add("add", a=u, b=d.add("mul", a=lap, b=d.const(HEAT_ALPHA))))
    return d.json("heat")


def life(n, generations):
    """Conway's Game of Life on a torus (the built-in life stencil)."""
    d = Doc(generations)
    cells = d.state("cells", n, "next", {"kind": "uniform", "low": 0, "high": 1, "seed": 4})
    d.out("next", d.add("life", a=cells))
    return d.json("life")


def gray_scott(n, steps):
    """Two reacting, diffusing fields on a torus:
    u <- u + Du lap(u) - u v^2 + F (1 - u);  v <- v + Dv lap(v) + u v^2 - (F + k) v."""
    d = Doc(steps)
    u = d.state("u", n, "u_next", {"kind": "uniform", "low": 0.9, "high": 1, "seed": 5})
    v = d.state("v", n, "v_next", {"kind": "uniform", "low": 0, "high": 0.1, "seed": 6})

    def lap(a):
        return d.add("sub", a=d.neighbours(a, "wrap"), b=d.add("mul", a=a, b=d.const(4.0)))

    uvv = d.add("mul", a=d.add("mul", a=u, b=v), b=v)
    feed = d.add("mul", a=d.add("sub", a=d.const(1.0), b=u), b=d.const(GS_F))
    du = d.add("add", a=d.add("sub", a=d.add("mul", a=lap(u), b=d.const(GS_DU)), b=uvv), b=feed)
    kill = d.add("mul", a=v, b=d.const(GS_F + GS_K))
    dv = d.add("sub", a=d.add("add", a=d.add("mul", a=lap(v), b=d.const(GS_DV)), b=uvv), b=kill)
    d.out("u_next", d.add("add", a=u, b=du))
    d.out("v_next", d.add("add", a=v, b=dv))
    return d.json("gray_scott")


BUILDERS = {"jacobi": jacobi, "heat": heat, "life": life, "gray_scott": gray_scott}
# The carried state of each workload, in the order the oracle takes and returns it.
STATE = {"jacobi": ["u"], "heat": ["u"], "life": ["cells"], "gray_scott": ["u", "v"]}
OUTPUT_OF = {"u": "u_next", "cells": "next", "v": "v_next"}


# ---- oracles: float64 NumPy, written from the equations, not from the documents ----

def _zero_neighbours(u):
    p = np.pad(u, 1)
    return p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:]


def _wrap_neighbours(u):
    return (np.roll(u, 1, 0) + np.roll(u, -1, 0)) + np.roll(u, 1, 1) + np.roll(u, -1, 1)


def oracle(name, state, constants, iterations):
    """`state`: the initial carried arrays; `constants`: other params (jacobi's q)."""
    s = [np.asarray(a, np.float64) for a in state]
    for _ in range(iterations):
        if name == "jacobi":
            s = [(_zero_neighbours(s[0]) + constants["q"]) / 4]
        elif name == "heat":
            s = [s[0] + HEAT_ALPHA * (_zero_neighbours(s[0]) - 4 * s[0])]
        elif name == "life":
            alive = s[0] > 0.5
            around = sum(np.roll(np.roll(alive, dy, 0), dx, 1).astype(np.int64)
                         for dy in (-1, 0, 1) for dx in (-1, 0, 1) if dy or dx)
            s = [((around == 3) | (alive & (around == 2))).astype(np.float64)]
        elif name == "gray_scott":
            u, v = s
            uvv = u * v * v
            s = [u + GS_DU * (_wrap_neighbours(u) - 4 * u) - uvv + GS_F * (1 - u),
                 v + GS_DV * (_wrap_neighbours(v) - 4 * v) + uvv - (GS_F + GS_K) * v]
    return s


def initial_state(name, n, seed):
    """Fresh seeded starting values in each workload's domain, and its constants."""
    rng = np.random.default_rng(seed)
    if name == "jacobi":
        return [np.zeros((n, n), np.float32)], {"q": rng.random((n, n), np.float32)}
    if name == "heat":
        return [rng.random((n, n), np.float32)], {}
    if name == "life":
        return [(rng.random((n, n)) < 0.3).astype(np.float32)], {}
    return [(0.9 + 0.1 * rng.random((n, n))).astype(np.float32),
            (0.1 * rng.random((n, n))).astype(np.float32)], {}


def document(name, n, iterations):
    return BUILDERS[name](n, iterations)


if __name__ == "__main__":
    root = pathlib.Path(__file__).resolve().parents[2] / "examples" / "pipelines"
    root.mkdir(parents=True, exist_ok=True)
    for name, (n, iterations) in FULL.items():
        path = root / f"{name}.json"
        path.write_text(json.dumps(document(name, n, iterations), indent=1) + "\n")
        print(f"wrote {path.relative_to(root.parents[1])}")
