"""Seed 002's multi-pass workloads as Scellis documents, and their NumPy oracles (float64, or
exact where the answer is: Life's cells, Ising's spins, the tree's sum, the sorts; Canny's edge
map from a float32 oracle, up to the cells a rounding could decide either way).

Each workload is one graph, run `repeat` times per step with its state carried between
iterations (graph protocol version 5), its neighbours read with `shift`. The tree sum is one graph
without a loop, its levels unrolled. The sorts (bitonic sort, top-k, stream compaction) are one
graph of many different stages too, unrolled with no `repeat` (graph protocol version 6:
`butterfly`, `arange` and the bit operations), each stage one fused kernel, the whole graph still
one submission. The stencils (Jacobi, heat, Life, Sobel, the wavefront, Canny's hysteresis) are
one fused kernel per iteration; the others are a few. What a loop body computes without reading
its carried state (the spectral filter's Walsh-Hadamard matrix, Canny's blur, gradients and
suppression) is hoisted out of the loop by the engine. The
state starts from a counter-hash initializer (or zeros, ones, a constant), so a full-size
document holds no bulk data (at most a vector of n values inline); tests and benchmarks feed the
initial state instead and run the oracle on it. The oracles are written from the equations, not
from the documents.

    python3 bench/pipelines/workloads.py   # rewrites examples/pipelines/*.json at full size
"""
import json
import pathlib

import numpy as np

import path_tracer as tracer

# The ops of graph-protocol version 6 the sorts use: a document with any is labelled version 6.
VERSION_6_OPS = {"arange", "butterfly", "bitwise_and", "bitwise_or", "bitwise_xor", "shift_left",
                 "shift_right"}

# Full sizes: seed 002's suite. The wavefront needs 2n - 1 sweeps; it runs 2n, the last one
# finding nothing left, so that its count has a temporal blocking factor (8). Ising is 1024²
# (not 2048²) so that its oracle, which hashes every cell twice a sweep, takes about a minute.
FULL = {"jacobi": (1024, 512), "heat": (1024, 1024), "life": (1024, 1000),
        "gray_scott": (512, 768), "sobel": (2048, 16), "ising": (1024, 1000),
        "tree_sum": (2**24, 24), "wavefront": (1024, 2048),
        "spectral": (512, 64), "canny": (1024, 64), "bitonic_sort": (2**20, 1),
        "top_k": (2**20, 1), "compaction": (2**20, 1), "path_tracer": (256, 64)}
HEAT_ALPHA = 0.2
GS_DU, GS_DV, GS_F, GS_K = 0.16, 0.08, 0.035, 0.065
SOBEL_RATE = 0.5
CANNY_NOISE, CANNY_DISC, CANNY_RECT = 0.3, 0.6, 0.35  # the image's parts' amplitudes
CANNY_LOW, CANNY_HIGH = 0.15, 0.35  # the double threshold on the gradient magnitude
CANNY_TAN = float(np.float32(np.tan(np.pi / 8)))  # tan(22.5 deg), the sectors' boundary, in f32
SPECTRAL_CUTOFF = 0.25  # of n: the sequency whose gain per pass is 1/e
ISING_BETA, ISING_SEEDS = 0.4, (11, 12)  # the black and the white half-sweeps' seeds
TOP_K = 1024  # of the full size's 2^20 keys
COMPACTION_THRESHOLD = 0.5  # compaction keeps the values above it


class Doc:
    """A graph under construction: ids in order, outputs by name. `repeat` None: run once (the
    unrolled sorts, graph protocol version 6)."""

    def __init__(self, repeat):
        self.nodes, self.outputs, self.repeat = [], [], repeat

    def add(self, op, **fields):
        self.nodes.append({"id": len(self.nodes), "op": op, **fields})
        return len(self.nodes) - 1

    def state(self, name, n, carry, init, rank=2):
        return self.add("param", name=name, shape=[n] * rank, init=init, carry=carry)

    def const(self, value):
        return self.add("full", shape=[], value=value)

    def shift(self, a, dy, dx, boundary):
        return self.add("shift", a=a, shifts=[dy, dx], boundary=boundary)

    def at(self, a, dy, dx, boundary):
        """a[i + dy, j + dx]: shift moves element i to i + shifts, so the offset is negated."""
        return self.add("shift", a=a, shifts=[-dy, -dx], boundary=boundary)

    def neighbours(self, a, boundary):
        """The sum of the four edge neighbours, in a fixed order."""
        s = self.add("add", a=self.shift(a, 1, 0, boundary), b=self.shift(a, -1, 0, boundary))
        s = self.add("add", a=s, b=self.shift(a, 0, 1, boundary))
        return self.add("add", a=s, b=self.shift(a, 0, -1, boundary))

    def out(self, name, node):
        self.outputs.append({"name": name, "id": node})

    def json(self, name):
        """The document; one without a loop (repeat None) has no `repeat`. It is labelled with the
        oldest graph-protocol version that has every op it uses."""
        loop = {} if self.repeat is None else {"repeat": self.repeat}
        version = 6 if any(n["op"] in VERSION_6_OPS for n in self.nodes) else 5
        return {"version": version, "name": name, "determinism": "prod", **loop,
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


def sobel(n, passes):
    """Edge-preserving smoothing steered by the Sobel gradient, clamped (replicated) edges: each
    pass u <- u + SOBEL_RATE (1 - g) (blur(u) - u), with g = sqrt(gx^2 + gy^2) / (4 sqrt 2) the
    Sobel gradient magnitude (gx, gy the 3x3 Sobel derivatives across columns and rows) and blur
    the 3x3 binomial filter [1 2 1]^T [1 2 1] / 16. An image in [0, 1] has g in [0, 1], so each
    pass moves a pixel part of the way to its blur, the less the stronger its edge, and the image
    stays in [0, 1]. Every tap is its own shift node: a value read once fuses into its reader, so
    a pass is one kernel."""
    d = Doc(passes)
    u = d.state("image", n, "image_next", {"kind": "uniform", "low": 0, "high": 1, "seed": 8})

    def taps(weighted):
        """The sum of weight * u[i + dy, j + dx] over the (dy, dx, weight) list, in its order."""
        total = None
        for dy, dx, weight in weighted:
            term = d.at(u, dy, dx, "clamp")
            if weight != 1:
                term = d.add("mul", a=term, b=d.const(float(weight)))
            total = term if total is None else d.add("add", a=total, b=term)
        return total

    gx = d.add("sub", a=taps([(-1, 1, 1), (0, 1, 2), (1, 1, 1)]),
               b=taps([(-1, -1, 1), (0, -1, 2), (1, -1, 1)]))
    gy = d.add("sub", a=taps([(1, -1, 1), (1, 0, 2), (1, 1, 1)]),
               b=taps([(-1, -1, 1), (-1, 0, 2), (-1, 1, 1)]))
    magnitude = d.add("sqrt", a=d.add("add", a=d.add("mul", a=gx, b=gx),
                                      b=d.add("mul", a=gy, b=gy)))
    rate = d.add("sub", a=d.const(SOBEL_RATE),
                 b=d.add("mul", a=magnitude, b=d.const(SOBEL_RATE / (4 * np.sqrt(2.0)))))
    blur = d.add("mul", a=taps([(dy, dx, (2 - abs(dy)) * (2 - abs(dx)))
                                for dy in (-1, 0, 1) for dx in (-1, 0, 1)]),
                 b=d.const(1 / 16))
    d.out("image_next", d.add("add", a=u, b=d.add("mul", a=rate,
                                                  b=d.add("sub", a=blur, b=u))))
    return d.json("sobel")


def ising_boltzmann():
    """The flip probabilities exp(-2 beta s nb) below 1 (s nb = 2 and 4), rounded once to f32:
    given to the graph as constants, so the acceptance test compares exactly the same numbers on
    every backend and in the oracle (the exp op is held to a tolerance, not to bits)."""
    return {k: float(np.float32(np.exp(-2 * ISING_BETA * k))) for k in (2, 4)}


def ising(n, sweeps):
    """The 2-D Ising model on a torus (J = 1, no field), checkerboard Metropolis: each iteration
    is a half-sweep over the black cells ((i + j) even) then one over the white cells, reading
    the black cells' new spins. A cell of the half-sweep's colour flips where
    uniform(seed, t, i) < exp(-2 beta s nb), nb the sum of its four neighbours (always where
    s nb <= 0), i the cell's row-major index. The step t is the carried `sweep` counter (+1 per
    iteration), and each colour has its own seed, so every half-sweep of every iteration (and of
    later runs) draws fresh numbers. The document starts cold (all spins +1); tests feed others."""
    d = Doc(sweeps)
    spins = d.state("spins", n, "spins_next", {"kind": "ones"})
    sweep = d.add("param", name="sweep", shape=[], init={"kind": "zeros"}, carry="sweep_next")
    # The checkerboard from the parities of the row and of the column, broadcast together.
    rows = d.add("input", name="row_parity", shape=[n, 1], data=[i % 2 for i in range(n)])
    cols = d.add("input", name="col_parity", shape=[1, n], data=[j % 2 for j in range(n)])
    colours = [d.add("eq", a=rows, b=cols), d.add("ne", a=rows, b=cols)]  # black, white
    boltzmann = ising_boltzmann()

    def half_sweep(s, colour, seed):
        def energy_is(k):
            """s nb == k, s nb computed afresh for each test: a value read by one consumer only
            fuses into it, so the whole half-sweep after the draw is one kernel."""
            return d.add("eq", a=d.add("mul", a=s, b=d.neighbours(s, "wrap")), b=d.const(k))
        p = d.add("where", cond=energy_is(2.0), a=d.const(boltzmann[2]), b=d.const(1.0))
        p = d.add("where", cond=energy_is(4.0), a=d.const(boltzmann[4]), b=p)
        p = d.add("where", cond=colour, a=p, b=d.const(0.0))  # u < 0 never: the other colour stays
        draw = d.add("uniform", step=sweep, shape=[n, n], seed=seed)
        return d.add("where", cond=d.add("lt", a=draw, b=p), a=d.add("neg", a=s), b=s)

    s = half_sweep(spins, colours[0], ISING_SEEDS[0])
    s = half_sweep(s, colours[1], ISING_SEEDS[1])
    d.out("spins_next", s)
    d.out("sweep_next", d.add("add", a=sweep, b=d.const(1.0)))
    return d.json("ising")


def tree_sum(n, levels):
    """A vector of n = 2^levels values summed as a binary tree, unrolled: level k sums the
    2^(levels - k) values left by level k - 1 in adjacent pairs, x <- [x[0] + x[1], x[2] + x[3],
    ...], so the vector halves at each level (2n additions' worth of traffic in all) and the last
    level leaves the sum alone in a vector of one. One graph without a loop, run once."""
    assert n == 2**levels, "the tree has log2(n) levels"
    d = Doc(None)
    x = d.add("param", name="x", shape=[n], init={"kind": "uniform", "low": 0, "high": 1, "seed": 9})
    for level in range(levels):
        pairs = d.add("reshape", a=x, shape=[n >> (level + 1), 2])  # row i: x[2i], x[2i + 1]
        x = d.add("sum", a=pairs, axis=1)
    d.out("sum", x)
    return d.json("tree_sum")


def wavefront(n, sweeps):
    """The heaviest monotone path, by dynamic programming over anti-diagonals:
    u[i, j] = cost[i, j] + max(u[i - 1, j], u[i, j - 1]), 0 off the grid. Cells not yet
    computed hold -1 (computed ones are >= 0): each iteration computes the cells whose two
    predecessors are computed, which at iteration k is exactly anti-diagonal i + j = k, so the
    grid is done after 2n - 1 dependent sweeps."""
    d = Doc(sweeps)
    u = d.state("u", n, "u_next", {"kind": "uniform", "low": -1, "high": -1, "seed": 0})
    cost = d.add("param", name="cost", shape=[n, n],
                 init={"kind": "uniform", "low": 0, "high": 1, "seed": 10})
    # Each read of a neighbour is its own shift node: a value read once fuses into its reader,
    # so an iteration is one kernel (a stencil body, temporally blocked).
    def up():
        return d.at(u, -1, 0, "zero")

    def left():
        return d.at(u, 0, -1, "zero")
    ready = d.add("ge", a=d.add("minimum", a=up(), b=left()), b=d.const(0.0))
    value = d.add("add", a=d.add("maximum", a=up(), b=left()), b=cost)
    frontier = d.add("where", cond=ready, a=value, b=u)
    d.out("u_next", d.add("where", cond=d.add("lt", a=u, b=d.const(0.0)), a=frontier, b=u))
    return d.json("wavefront")


def canny_shapes(n):
    """The synthetic image's shapes, in whole pixels (exact in f32): a disc (centre row, centre
    column, radius) and a rectangle (centre row, centre column, half height, half width)."""
    disc = (round(0.35 * n), round(0.4 * n), round(0.22 * n))
    rect = (round(0.7 * n), round(0.62 * n), round(0.14 * n), round(0.22 * n))
    return disc, rect


def canny(n, iterations):
    """Canny edge detection. The image is noise (a counter-hash `uniform` param, scaled by
    CANNY_NOISE) plus a disc and a rectangle drawn from the row and column index ramps; it is
    blurred by the 5x5 binomial Gaussian ([1 4 6 4 1] / 16 along rows, then along columns),
    differentiated by the 3x3 Sobel filters (gx across columns, gy across rows), every neighbour a
    `shift` with a zero boundary; non-maximum suppression keeps a cell whose magnitude
    m = sqrt(gx^2 + gy^2) is at least both neighbours' along the gradient's direction, the
    sector told by comparisons only (|gy| <= tan(22.5 deg) |gx|: left and right; |gx| <=
    tan(22.5 deg) |gy|: up and down; else the diagonal gx gy > 0 picks); the double threshold makes
    `strong` (m >= CANNY_HIGH) and `weak` (m >= CANNY_LOW) cells. Everything so far reads nothing
    carried: the loop's invariants, hoisted. The loop is the hysteresis,
    edges <- max(strong, min(weak, dilate3x3(edges))) from zero, `iterations` times: an edge
    grows along weak cells one pixel per iteration from the strong ones."""
    d = Doc(iterations)
    edges = d.state("edges", n, "edges_next", {"kind": "zeros"})
    noise = d.add("param", name="noise", shape=[n, n],
                  init={"kind": "uniform", "low": 0, "high": 1, "seed": 13})
    row = d.add("input", name="row_index", shape=[n, 1], data=list(range(n)))
    col = d.add("input", name="col_index", shape=[1, n], data=list(range(n)))
    (dr, dc, radius), (rr, rc, half_h, half_w) = canny_shapes(n)

    def squared_distance(index, centre):
        off = d.add("sub", a=index, b=d.const(float(centre)))
        return d.add("mul", a=off, b=off)

    def level(cond, value, otherwise):
        return d.add("where", cond=cond, a=d.const(value), b=otherwise)

    inside = d.add("le", a=d.add("add", a=squared_distance(row, dr), b=squared_distance(col, dc)),
                   b=d.const(float(radius * radius)))
    disc = level(inside, CANNY_DISC, d.const(0.0))
    in_rows = d.add("le", a=squared_distance(row, rr), b=d.const(float(half_h * half_h)))
    in_cols = d.add("le", a=squared_distance(col, rc), b=d.const(float(half_w * half_w)))
    rect = d.add("where", cond=in_rows, a=level(in_cols, CANNY_RECT, d.const(0.0)), b=d.const(0.0))
    image = d.add("add", a=d.add("add", a=d.add("mul", a=noise, b=d.const(CANNY_NOISE)), b=disc),
                  b=rect)

    def weighted(src, offsets):
        """sum of weight * src[i + dy, j + dx] over the (dy, dx, weight) list, in its order."""
        total = None
        for dy, dx, weight in offsets:
            term = d.at(src, dy, dx, "zero")
            if weight != 1:
                term = d.add("mul", a=term, b=d.const(float(weight)))
            total = term if total is None else d.add("add", a=total, b=term)
        return total
    binomial = [w / 16 for w in (1, 4, 6, 4, 1)]
    across = weighted(image, [(0, k - 2, w) for k, w in enumerate(binomial)])
    blur = weighted(across, [(k - 2, 0, w) for k, w in enumerate(binomial)])
    gx = d.add("sub", a=weighted(blur, [(-1, 1, 1), (0, 1, 2), (1, 1, 1)]),
               b=weighted(blur, [(-1, -1, 1), (0, -1, 2), (1, -1, 1)]))
    gy = d.add("sub", a=weighted(blur, [(1, -1, 1), (1, 0, 2), (1, 1, 1)]),
               b=weighted(blur, [(-1, -1, 1), (-1, 0, 2), (-1, 1, 1)]))
    m = d.add("sqrt", a=d.add("add", a=d.add("mul", a=gx, b=gx), b=d.add("mul", a=gy, b=gy)))

    # Each test is built afresh where it is used: a value read once fuses into its reader, so
    # suppression is one kernel over gx, gy and m.
    def absolute(g):
        return d.add("maximum", a=g, b=d.add("neg", a=g))

    def flatter(a, b):
        """|a| <= tan(22.5 deg) |b|"""
        return d.add("le", a=absolute(a), b=d.add("mul", a=absolute(b), b=d.const(CANNY_TAN)))

    def along(sign):
        """m at the neighbour along the gradient's sector, on the side `sign` (-1 or +1)."""
        diagonal = d.add("where", cond=d.add("gt", a=d.add("mul", a=gx, b=gy), b=d.const(0.0)),
                         a=d.at(m, sign, sign, "zero"), b=d.at(m, sign, -sign, "zero"))
        vertical = d.add("where", cond=flatter(gx, gy), a=d.at(m, sign, 0, "zero"), b=diagonal)
        return d.add("where", cond=flatter(gy, gx), a=d.at(m, 0, sign, "zero"), b=vertical)
    peak = d.add("where", cond=d.add("ge", a=m, b=along(-1)),
                 a=d.add("where", cond=d.add("ge", a=m, b=along(1)), a=m, b=d.const(0.0)),
                 b=d.const(0.0))

    def above(threshold):
        return level(d.add("ge", a=peak, b=d.const(threshold)), 1.0, d.const(0.0))
    grown = None
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            cell = d.at(edges, dy, dx, "zero")
            grown = cell if grown is None else d.add("maximum", a=grown, b=cell)
    d.out("edges_next", d.add("maximum", a=above(CANNY_HIGH),
                              b=d.add("minimum", a=above(CANNY_LOW), b=grown)))
    return d.json("canny")


def walsh_sequency(n):
    """The sequency (sign changes along the row) of each row of the n x n Sylvester-Hadamard
    matrix, n a power of 2: the Walsh basis's frequency."""
    h = np.ones((1, 1))
    while len(h) < n:
        h = np.block([[h, h], [h, -h]])
    return (np.diff(h, axis=1) != 0).sum(axis=1)


def spectral_gains(n):
    """The low-pass gain of each Walsh row, g(s) = exp(-(s / SPECTRAL_CUTOFF n)^2), as f32."""
    s = walsh_sequency(n)
    return np.exp(-(s / (SPECTRAL_CUTOFF * n)) ** 2).astype(np.float32)


def spectral(n, passes):
    """A low-pass filter in the Walsh-Hadamard domain, repeated: with H the n x n
    Sylvester-Hadamard matrix (H H = n I), each pass is
    u <- H (G * (H u H)) H / n^2, G[k, l] = g(seq k) g(seq l) the gains of the rows' sequencies,
    so N passes leave u = H (G^N * (H u H)) H / n^2. H is built in the graph, exactly, as
    H[k, j] = prod over bits b of (1 - 2 k_b j_b) = (-1)^popcount(k & j), the bits of the row and
    column indices (inline ramps 0..n-1) taken by truncating casts: one elementwise kernel. The
    graph protocol has no trigonometric op to build a DCT matrix from, and an n x n table inline
    would be the document's bulk. The gains come inline, one per row (n values)."""
    assert n & (n - 1) == 0, "the Walsh-Hadamard matrix has a power-of-2 size"
    d = Doc(passes)
    u = d.state("u", n, "u_next", {"kind": "uniform", "low": 0, "high": 1, "seed": 12})
    row = d.add("input", name="row_index", shape=[n, 1], data=list(range(n)))
    col = d.add("input", name="col_index", shape=[1, n], data=list(range(n)))

    def bit(index, b):
        """Bit b of the index ramp, as 0 or 1: trunc(i / 2^b) - 2 trunc(i / 2^(b + 1)), every
        step exact (scaling by powers of 2, truncation of non-negative values)."""
        def truncated(scale):
            whole = d.add("cast", a=d.add("mul", a=index, b=d.const(scale)), dtype="i32")
            return d.add("cast", a=whole, dtype="f32")
        return d.add("sub", a=truncated(0.5**b),
                     b=d.add("mul", a=truncated(0.5 ** (b + 1)), b=d.const(2.0)))
    h = None
    for b in range(n.bit_length() - 1):
        both = d.add("mul", a=bit(row, b), b=bit(col, b))
        sign = d.add("sub", a=d.const(1.0), b=d.add("mul", a=both, b=d.const(2.0)))
        h = sign if h is None else d.add("mul", a=h, b=sign)
    gains = [float(g) for g in spectral_gains(n)]
    rows = d.add("input", name="row_gain", shape=[n, 1], data=gains)
    cols = d.add("input", name="col_gain", shape=[1, n], data=gains)
    spectrum = d.add("matmul", a=d.add("matmul", a=h, b=u), b=h)
    scale = d.add("mul", a=d.add("mul", a=rows, b=cols), b=d.const(1.0 / (n * n)))
    filtered = d.add("mul", a=spectrum, b=scale)
    d.out("u_next", d.add("matmul", a=d.add("matmul", a=h, b=filtered), b=h))
    return d.json("spectral")


def path_tracer(n, samples):
    """A Monte Carlo path tracer (bench/pipelines/path_tracer.py): an n x n image of a few
    spheres on a ground plane under a sky, one sample per pixel per iteration, each path followed
    for tracer.BOUNCES surfaces (unrolled); the loop carries each channel's radiance sum and the
    sample counter that steps the counter-hash RNG."""
    d = Doc(samples)
    tracer.build(d, n)
    return d.json("path_tracer")


def top_k_of(n):
    """k for n keys: TOP_K, or a quarter of a small n (a test's 2^10 keys keep 256)."""
    return min(TOP_K, n // 4)


def bitonic_stages(d, n, keys, payload=None):
    """Batcher's bitonic sorting network over the n = 2^p values of `keys`, ascending: for
    k = 2, 4, ..., n and j = k/2, ..., 1, element i meets its partner i ^ j and keeps the smaller
    of the two where (i & j == 0) == (i & k == 0), else the larger: p (p + 1) / 2 stages, each one
    fused kernel (the partner a permuted load, the index ramp computed in the kernel). A payload
    (unique keys only) takes its partner's value wherever the key did, in a kernel of its own per
    stage (a kernel writes one value). Returns the sorted keys and the payload that followed."""
    assert n & (n - 1) == 0 and n >= 2, "a bitonic network sorts a power of 2 of keys"
    index = d.add("arange", shape=[n])

    def bit_clear(bit):
        return d.add("eq", a=d.add("bitwise_and", a=index, scalar=bit), scalar=0)
    k = 2
    while k <= n:
        j = k // 2
        while j >= 1:
            partner = d.add("butterfly", a=keys, mask=j)
            keep_smaller = d.add("eq", a=bit_clear(j), b=bit_clear(k))
            moved = d.add("where", cond=keep_smaller, a=d.add("minimum", a=keys, b=partner),
                          b=d.add("maximum", a=keys, b=partner))
            if payload is not None:
                swapped = d.add("ne", a=moved, b=keys)
                payload = d.add("where", cond=swapped, a=d.add("butterfly", a=payload, mask=j),
                                b=payload)
            keys = moved
            j //= 2
        k *= 2
    return keys, payload


def bitonic_sort(n, _iterations=1):
    """n f32 keys (the counter-hash uniform initializer's) sorted ascending by the bitonic
    network: for 2^20 keys, 210 stages."""
    d = Doc(None)
    keys = d.add("param", name="keys", shape=[n],
                 init={"kind": "uniform", "low": 0, "high": 1, "seed": 13})
    d.out("sorted", bitonic_stages(d, n, keys)[0])
    return d.json("bitonic_sort")


def top_k(n, _iterations=1):
    """The k = top_k_of(n) largest of n keys, ascending: the bitonic sort, then its last k."""
    d = Doc(None)
    keys = d.add("param", name="keys", shape=[n],
                 init={"kind": "uniform", "low": 0, "high": 1, "seed": 14})
    ordered, _ = bitonic_stages(d, n, keys)
    d.out("top", d.add("slice", a=ordered, starts=[n - top_k_of(n)]))
    return d.json("top_k")


def compaction(n, _iterations=1):
    """Stream compaction, stable, as a key-value sort: the key of element i is i where it is kept
    (x > COMPACTION_THRESHOLD) and n + i where it is not, so the keys are unique integers (exact
    in f32 below 2^24) and sorting them moves the kept values to the front in their order, the
    others after them in theirs; `count` is how many were kept (the sum of the mask)."""
    d = Doc(None)
    x = d.add("param", name="x", shape=[n],
              init={"kind": "uniform", "low": 0, "high": 1, "seed": 15})
    def kept():
        """The mask, a node per reader: a value read once fuses into its reader's kernel."""
        return d.add("gt", a=x, scalar=COMPACTION_THRESHOLD)
    index = d.add("arange", shape=[n], dtype="f32")
    keys = d.add("where", cond=kept(), a=index, b=d.add("add", a=index, scalar=float(n)))
    _, values = bitonic_stages(d, n, keys, payload=x)
    d.out("kept", values)
    d.out("count", d.add("sum", a=d.add("cast", a=kept(), dtype="f32")))
    return d.json("compaction")


BUILDERS = {"jacobi": jacobi, "heat": heat, "life": life, "gray_scott": gray_scott,
            "sobel": sobel, "ising": ising, "tree_sum": tree_sum, "wavefront": wavefront,
            "spectral": spectral, "canny": canny, "bitonic_sort": bitonic_sort, "top_k": top_k,
            "compaction": compaction, "path_tracer": path_tracer}
# The sorts: one run of a graph of distinct stages, no `repeat`, whose answer is not their state.
SORTS = {"bitonic_sort", "top_k", "compaction"}
# The carried state of each workload, in the order the oracle takes and returns it; for the
# sorts, the input the graph starts from.
STATE = {"jacobi": ["u"], "heat": ["u"], "life": ["cells"], "gray_scott": ["u", "v"],
         "sobel": ["image"], "ising": ["spins", "sweep"], "tree_sum": ["x"], "wavefront": ["u"],
         "spectral": ["u"], "canny": ["edges"], "bitonic_sort": ["keys"], "top_k": ["keys"],
         "compaction": ["x"], "path_tracer": ["red", "green", "blue", "sample"]}
# The params that are not carried (read every iteration, never written).
CONSTANTS = {"jacobi": ["q"], "wavefront": ["cost"], "canny": ["noise"]}
# The output each state's answer is read from (the tree, which has no loop, answers its sum).
OUTPUT_OF = {"u": "u_next", "cells": "next", "v": "v_next", "image": "image_next",
             "spins": "spins_next", "sweep": "sweep_next", "x": "sum", "edges": "edges_next",
             "red": "red_next", "green": "green_next", "blue": "blue_next",
             "sample": "sample_next"}
# The sorts' outputs, in the order the oracle returns them (the others': OUTPUT_OF their state).
SORT_OUTPUTS = {"bitonic_sort": ["sorted"], "top_k": ["top"], "compaction": ["kept", "count"]}
# Workloads whose answer is compared bit for bit (0/1 cells, +-1 spins and their counter; sorted
# keys and moved values).
EXACT = {"life", "ising"} | SORTS


def outputs(name):
    """The outputs the oracle's answer is compared with, in its order."""
    return SORT_OUTPUTS.get(name) or [OUTPUT_OF[s] for s in STATE[name]]


# ---- oracles: float64 NumPy, written from the equations, not from the documents ----

def _zero_neighbours(u):
    p = np.pad(u, 1)
    return p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:]


def _wrap_neighbours(u):
    return (np.roll(u, 1, 0) + np.roll(u, -1, 0)) + np.roll(u, 1, 1) + np.roll(u, -1, 1)


def _pcg_hash(x):
    """The u32 PCG hash (Jarzynski and Olano 2020) on uint32 arrays, wrapping mod 2^32."""
    x = np.asarray(x, np.uint32)
    s = x * np.uint32(747796405) + np.uint32(2891336453)
    w = ((s >> ((s >> np.uint32(28)) + np.uint32(4))) ^ s) * np.uint32(277803737)
    return (w >> np.uint32(22)) ^ w


def counter_uniform(seed, step, shape, hashed_index=None):
    """uniform(seed, step, i) for every element i in row-major order, as docs/ops.md defines it:
    bits = h(h(i) ^ h(seed ^ h(step))), uniform = (bits >> 8) / 2^24. `hashed_index`: h(i),
    when the caller keeps it between draws of one shape."""
    if hashed_index is None:
        hashed_index = _pcg_hash(np.arange(np.prod(shape), dtype=np.uint32))
    key = _pcg_hash(np.array([seed], np.uint32) ^ _pcg_hash(np.array([step], np.uint32)))
    bits = _pcg_hash(hashed_index ^ key)
    return ((bits >> np.uint32(8)).astype(np.float64) / 2**24).reshape(shape)


def _padded_at(p, dy, dx):
    """u[i + dy, j + dx] of the image u that `p` holds with a one-pixel border."""
    return p[1 + dy:p.shape[0] - 1 + dy, 1 + dx:p.shape[1] - 1 + dx]


def _sobel_magnitude(p):
    """sqrt(gx^2 + gy^2) of the image that `p` holds with a one-pixel border."""
    def at(dy, dx):
        return _padded_at(p, dy, dx)
    gx = (at(-1, 1) + 2 * at(0, 1) + at(1, 1)) - (at(-1, -1) + 2 * at(0, -1) + at(1, -1))
    gy = (at(1, -1) + 2 * at(1, 0) + at(1, 1)) - (at(-1, -1) + 2 * at(-1, 0) + at(-1, 1))
    return np.sqrt(gx**2 + gy**2)


def _ising(spins, sweep, iterations):
    n = spins.shape[0]
    black = (np.add.outer(np.arange(n), np.arange(n)) % 2) == 0
    flip_probability = ising_boltzmann()
    hashed_index = _pcg_hash(np.arange(spins.size, dtype=np.uint32))
    for _ in range(iterations):
        for colour, seed in ((black, ISING_SEEDS[0]), (~black, ISING_SEEDS[1])):
            energy = spins * _wrap_neighbours(spins)  # s nb: half the energy a flip costs
            p = np.where(energy == 4, flip_probability[4],
                         np.where(energy == 2, flip_probability[2], 1.0))
            flip = colour & (counter_uniform(seed, int(sweep), spins.shape, hashed_index) < p)
            spins = np.where(flip, -spins, spins)
        sweep = sweep + 1
    return [spins, sweep]


def _wavefront(u, cost, iterations):
    """The path DP row of anti-diagonals at a time, on a grid padded with a zero border."""
    n = u.shape[0]
    assert np.all(u == -1), "the wavefront starts with nothing computed"
    done = min(iterations, 2 * n - 1)
    best = np.zeros((n + 1, n + 1))
    for k in range(done):
        i = np.arange(max(0, k - n + 1), min(k, n - 1) + 1)
        j = k - i
        best[i + 1, j + 1] = cost[i, j] + np.maximum(best[i, j + 1], best[i + 1, j])
    out = best[1:, 1:]
    out[np.add.outer(np.arange(n), np.arange(n)) >= done] = -1
    return [out]


def _walsh_hadamard(a):
    """H a for the Sylvester-Hadamard H, by the fast transform's butterflies along axis 0."""
    n = a.shape[0]
    a = a.copy()
    half = 1
    while half < n:
        blocks = a.reshape(n // (2 * half), 2, half, -1)
        blocks[:, 0], blocks[:, 1] = blocks[:, 0] + blocks[:, 1], blocks[:, 0] - blocks[:, 1]
        a = blocks.reshape(a.shape)
        half *= 2
    return a


def _spectral(u, iterations):
    """All the passes at once: u_N = H (G^N * (H u H)) H / n^2, the spectrum by the fast
    Walsh-Hadamard transform (H is symmetric: H u H is the transform of both axes)."""
    n = u.shape[0]
    both_axes = lambda a: _walsh_hadamard(_walsh_hadamard(a).T).T  # noqa: E731
    g = spectral_gains(n).astype(np.float64)
    return [both_axes(np.outer(g, g) ** iterations * both_axes(u)) / n**2]


def _canny_stages(noise):
    """The image, its blur, gradients and magnitude, in float32 and in the documented order."""
    f32 = np.float32
    n = noise.shape[0]
    (dr, dc, radius), (rr, rc, half_h, half_w) = canny_shapes(n)
    rows = np.arange(n, dtype=f32)[:, None]
    cols = np.arange(n, dtype=f32)[None, :]
    disc = np.where((rows - f32(dr)) ** 2 + (cols - f32(dc)) ** 2 <= f32(radius * radius),
                    f32(CANNY_DISC), f32(0))
    rect = np.where(((rows - f32(rr)) ** 2 <= f32(half_h**2)) & ((cols - f32(rc)) ** 2 <= f32(half_w**2)),
                    f32(CANNY_RECT), f32(0))
    image = (noise.astype(f32) * f32(CANNY_NOISE) + disc) + rect

    def at(a, dy, dx):
        """a[i + dy, j + dx], zero off the grid."""
        p = np.pad(a, 2)
        return p[2 + dy:2 + dy + n, 2 + dx:2 + dx + n]

    def weighted(a, offsets):
        total = None
        for dy, dx, w in offsets:
            term = at(a, dy, dx) if w == 1 else at(a, dy, dx) * f32(w)
            total = term if total is None else total + term
        return total
    binomial = [w / 16 for w in (1, 4, 6, 4, 1)]
    blur = weighted(weighted(image, [(0, k - 2, w) for k, w in enumerate(binomial)]),
                    [(k - 2, 0, w) for k, w in enumerate(binomial)])
    gx = (weighted(blur, [(-1, 1, 1), (0, 1, 2), (1, 1, 1)])
          - weighted(blur, [(-1, -1, 1), (0, -1, 2), (1, -1, 1)]))
    gy = (weighted(blur, [(1, -1, 1), (1, 0, 2), (1, 1, 1)])
          - weighted(blur, [(-1, -1, 1), (-1, 0, 2), (-1, 1, 1)]))
    m = np.sqrt(gx * gx + gy * gy)
    return gx, gy, m, at


def _canny_classes(noise, tolerance):
    """(strong, weak, ambiguous): the double threshold after non-maximum suppression, and the
    cells whose class a relative difference of `tolerance` in a magnitude could change (near a
    threshold, near a tie with a neighbour, near a sector boundary)."""
    gx, gy, m, at = _canny_stages(noise)
    t = np.float32(CANNY_TAN)
    ax, ay = np.abs(gx), np.abs(gy)
    horizontal, vertical = ay <= ax * t, ax <= ay * t
    positive = gx * gy > 0

    def along(s):
        return np.where(horizontal, at(m, 0, s),
                        np.where(vertical, at(m, s, 0),
                                 np.where(positive, at(m, s, s), at(m, s, -s))))
    before, after = along(-1), along(1)
    peak = np.where((m >= before) & (m >= after), m, np.float32(0))
    strong, weak = peak >= np.float32(CANNY_HIGH), peak >= np.float32(CANNY_LOW)

    def near(a, b):
        return np.abs(a.astype(np.float64) - b) <= tolerance * np.maximum(np.abs(a), np.abs(b))
    scale = ax.astype(np.float64) + ay
    ambiguous = m >= np.float32(CANNY_LOW * (1 - tolerance))  # anything below is neither
    ambiguous &= (near(m, CANNY_HIGH) | near(m, CANNY_LOW) | near(m, before) | near(m, after)
                  | (np.abs(ay - ax * t.astype(np.float64)) <= tolerance * scale)
                  | (np.abs(ax - ay * t.astype(np.float64)) <= tolerance * scale)
                  | (np.abs(gx.astype(np.float64) * gy) <= tolerance * scale * scale))
    return strong, weak, ambiguous


def _hysteresis(strong, weak, iterations):
    edges = np.zeros(strong.shape, bool)
    for _ in range(iterations):
        p = np.pad(edges, 1)
        n0, n1 = edges.shape
        grown = np.zeros_like(edges)
        for dy in (0, 1, 2):
            for dx in (0, 1, 2):
                grown |= p[dy:dy + n0, dx:dx + n1]
        edges = strong | (weak & grown)
    return edges


def canny_edges(noise, iterations):
    """The edge map, 1.0 or 0.0, from the float32 stages with every comparison taken as computed."""
    strong, weak, _ = _canny_classes(noise, 0.0)
    return _hysteresis(strong, weak, iterations).astype(np.float64)


def canny_check(got, noise, iterations, tolerance=1e-4):
    """Whether the engine's edge map is the oracle's up to ambiguous cells: hysteresis only grows
    with more strong or weak cells, so every answer the ambiguous cells allow lies between the
    map with all of them neither strong nor weak and the map with all of them both. Returns the
    check and its counts."""
    strong, weak, ambiguous = _canny_classes(noise, tolerance)
    low = _hysteresis(strong & ~ambiguous, weak & ~ambiguous, iterations)
    high = _hysteresis(strong | ambiguous, weak | ambiguous, iterations)
    edges = np.asarray(got) > 0.5
    exact = _hysteresis(strong, weak, iterations)
    return {"within_bounds": bool(np.all(low <= edges) and np.all(edges <= high)),
            "ambiguous_cells": int(ambiguous.sum()),
            "undecided_cells": int((low != high).sum()),
            "differing_cells": int((edges != exact).sum()),
            "edge_cells": int(exact.sum())}


def path_tracer_render(state, iterations):
    """The path tracer's oracle: (the sums and the counter, each pixel's ambiguous samples)."""
    sums, sample = state[:3], float(np.asarray(state[3]))
    n = np.asarray(sums[0]).shape[0]
    hashed_index = _pcg_hash(np.arange(n * n, dtype=np.uint32))
    return tracer.render(sums, sample, iterations,
                         lambda seed, step, shape: counter_uniform(seed, step, shape, hashed_index))


def path_tracer_check(got, state, iterations, tolerance=1e-4):
    """Whether the engine's sums are the oracle's up to its ambiguous samples
    (path_tracer.check); with the counts."""
    want, ambiguous = path_tracer_render(state, iterations)
    return tracer.check(got, want, ambiguous, tolerance)


def oracle(name, state, constants, iterations):
    """`state`: the initial carried arrays; `constants`: the other params (jacobi's q)."""
    s = [np.asarray(a, np.float64) for a in state]
    if name == "path_tracer":
        return path_tracer_render(s, iterations)[0]
    if name == "bitonic_sort":
        return [np.sort(s[0])]
    if name == "top_k":
        return [np.sort(s[0])[-top_k_of(len(s[0])):]]
    if name == "compaction":
        kept = s[0] > COMPACTION_THRESHOLD
        return [np.concatenate([s[0][kept], s[0][~kept]]), np.float64(kept.sum())]
    if name == "spectral":
        return _spectral(s[0], iterations)
    if name == "ising":
        return _ising(s[0], s[1], iterations)
    if name == "wavefront":
        return _wavefront(s[0], np.asarray(constants["cost"], np.float64), iterations)
    if name == "tree_sum":
        # Exact: 2^k f32 values below 1 carry at most 24 + k significant bits, within f64's 53
        # for any k up to 29, so every partial sum is exact in any order.
        return [np.array([s[0].sum()])]
    if name == "canny":
        return [canny_edges(np.asarray(constants["noise"], np.float32), iterations)]
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
        elif name == "sobel":
            u = s[0]
            p = np.pad(u, 1, mode="edge")
            blur = sum((2 - abs(dy)) * (2 - abs(dx)) * _padded_at(p, dy, dx)
                       for dy in (-1, 0, 1) for dx in (-1, 0, 1)) / 16
            edge = _sobel_magnitude(p) / (4 * np.sqrt(2))
            s = [u + SOBEL_RATE * (1 - edge) * (blur - u)]
    return s


def initial_state(name, n, seed):
    """Fresh seeded starting values in each workload's domain, and its constants."""
    rng = np.random.default_rng(seed)
    if name == "jacobi":
        return [np.zeros((n, n), np.float32)], {"q": rng.random((n, n), np.float32)}
    if name in ("heat", "sobel", "spectral"):
        return [rng.random((n, n), np.float32)], {}
    if name == "life":
        return [(rng.random((n, n)) < 0.3).astype(np.float32)], {}
    if name == "ising":
        spins = np.where(rng.random((n, n)) < 0.5, -1, 1).astype(np.float32)
        return [spins, np.float32(rng.integers(0, 1000))], {}
    if name in ("tree_sum", "bitonic_sort", "top_k", "compaction"):
        return [rng.random(n, np.float32)], {}
    if name == "canny":
        return [np.zeros((n, n), np.float32)], {"noise": rng.random((n, n), np.float32)}
    if name == "path_tracer":
        # No radiance yet; the counter somewhere, so that the draws are fresh.
        zeros = [np.zeros((n, n), np.float32) for _ in tracer.CHANNELS]
        return zeros + [np.float32(rng.integers(0, 1000))], {}
    if name == "wavefront":
        return [np.full((n, n), -1, np.float32)], {"cost": rng.random((n, n), np.float32)}
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
