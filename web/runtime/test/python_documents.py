"""The documents the Python package's tracer (scellis.pipeline) makes of the programs that
pipeline.test.ts traces in TypeScript, printed as one JSON object {program: document}: the test
holds the two tracers to the same documents. Each program here is written as its TypeScript twin
is, op for op."""
import json
import sys

import numpy as np

import scellis

ROWS, COLS = 12, 10


def neighbours(u, boundary="zero"):
    return (u.shift([1, 0], boundary) + u.shift([-1, 0], boundary) + u.shift([0, 1], boundary)
            + u.shift([0, -1], boundary))


def jacobi(u, q):
    for _ in range(40):
        u = (neighbours(u) + q) * 0.25
    return u


def heat(u, steps, alpha):
    return scellis.loop(steps, lambda u: u + (neighbours(u) - u * 4.0) * alpha, u)


def life(u):
    for _ in range(20):
        n = neighbours(u, "wrap") + (u.shift([1, 1], "wrap") + u.shift([1, -1], "wrap")
                                     + u.shift([-1, 1], "wrap") + u.shift([-1, -1], "wrap"))
        u = u.where(n.eq(2), 0.0).maximum(n.eq(3).cast("f32"))
    return u


def coupled(u, v):
    half = u * 0.5
    start = u
    for _ in range(12):
        u, v = u + v.shift([0, 1], "wrap") * 0.25 - half * 0.125, v * 0.5 + start * 0.25
    return {"u": u * 2.0, "v": v, "total": u + v}


def scan(x, w):
    for _ in range(6):
        x = x.graph.op("cumsum", a=x @ w, axis=1) * 0.01
    return [x, x.sum()]


def accumulate(u, q):
    total = u * 0.0  # a starting value computed before the loop: the prologue's
    for _ in range(8):
        u = (neighbours(u) + q) * 0.25
        total = total + u
    return [u, total]


def once(x):
    return x.shift([1, 1], "wrap") * 3.0


# Named as their TypeScript twins: a document takes its function's name.
def bitonicSort(keys):  # noqa: N802
    n = keys.shape[0]
    g = keys.graph

    def bit_clear(bit):
        return (g.arange([n]) & bit).eq(0)
    k = 2
    while k <= n:
        j = k // 2
        while j >= 1:
            partner = keys.butterfly(j)
            keys = g.where(bit_clear(j).eq(bit_clear(k)), keys.minimum(partner),
                           keys.maximum(partner))
            j //= 2
        k *= 2
    return keys


def bitOps(x):  # noqa: N802
    i = x.cast("i32")
    return [(i | 5).cast("f32"), (i ^ 3).cast("f32"), (i & 6).cast("f32"), (i << 2).cast("f32"),
            (i >> 1).cast("f32"), (i & (i >> 31)).cast("f32"),
            x.graph.arange([2, 3], axis=1, dtype="f32")]


def main():
    f = np.zeros((ROWS, COLS), np.float32)
    sq = np.zeros((COLS, COLS), np.float32)
    programs = {
        "jacobi": (jacobi, (f, f)),
        "heat": (heat, (f, 30, 0.2)),
        "life": (life, (f,)),
        "coupled": (coupled, (f, f)),
        "scan": (scan, (f, sq)),
        "once": (once, (f,)),
        "accumulate": (accumulate, (f, f)),
        "bitonic_sort": (bitonicSort, (np.zeros(8, np.float32),)),
        "bit_ops": (bitOps, (np.zeros(8, np.float32),)),
    }
    out = {}
    for name, (fn, args) in programs.items():
        traced = scellis.pipeline(fn).trace(*args)
        out[name] = traced.doc
        if traced.prologue is not None:
            out[name + ".prologue"] = json.loads(traced.prologue)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
