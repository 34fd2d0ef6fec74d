#!/usr/bin/env python3
"""Prints the C++ table of special-value conformance cases (src/conform/special_values.inc).

Each case feeds NaN, +-inf and +-0 to one op; the expected output is what PyTorch (float32, CPU)
gives for the same inputs, computed here independently of Scellis. `life` has no PyTorch
counterpart: its rule (a NaN among the nine cells read gives NaN) is computed with NumPy.

  .venv/bin/python tools/special_value_expectations.py > src/conform/special_values.inc
"""
import math

import numpy as np
import torch
import torch.nn.functional as F

nan, inf = float("nan"), float("inf")
S = [nan, inf, -inf, -0.0, 0.0, 1.5, -1.5, 100.0, -100.0]
A = [nan, 1.0, inf, inf, 0.0, 1.0, -1.0, 0.0, 2.0, -inf]
B = [1.0, nan, -inf, inf, inf, 0.0, 0.0, 0.0, 3.0, 2.0]
ROWS = [[1.0, nan, 2.0], [1.0, inf, 2.0], [1.0, -inf, 2.0], [-inf, -inf, -inf], [1.0, 2.0, 3.0]]
t32 = lambda v: torch.tensor(v, dtype=torch.float32)
cases = []


def case(op, name, inputs, out, attrs=None, version=2):
    """inputs: list of (name, shape, values); out: a tensor."""
    cases.append((op, name, inputs, out.detach().reshape(-1).tolist(), attrs or {}, version))


def flat(x):
    return np.asarray(x, dtype=np.float32).reshape(-1).tolist()


for op, fn in [("relu", torch.relu), ("neg", torch.neg), ("exp", torch.exp), ("log", torch.log),
               ("sqrt", torch.sqrt), ("tanh", torch.tanh), ("sigmoid", torch.sigmoid),
               ("gelu", F.gelu)]:
    case(op, "special", [("a", [len(S)], S)], fn(t32(S)))
# positive is relu's derivative as PyTorch's threshold_backward computes it: 0 where a <= 0.
x = t32(S)
case("positive", "special", [("a", [len(S)], S)], torch.where(x <= 0, 0.0, 1.0))
for op, fn in [("add", torch.add), ("sub", torch.sub), ("mul", torch.mul), ("div", torch.div)]:
    case(op, "special", [("a", [len(A)], A), ("b", [len(B)], B)], fn(t32(A), t32(B)))
# maximum and minimum: NaN propagates, equal operands (signed zeros too) give a. max_share is the
# share of maximum's gradient PyTorch's backward gives a (ties split, NaN passes to both).
MA3 = [nan, 1.0, -0.0, 0.0, 2.0, inf, -inf, 3.0, -inf, 5.0]
MB3 = [1.0, nan, 0.0, -0.0, 2.0, 1.0, 0.0, -1.0, -inf, inf]
for op, fn in [("maximum", torch.maximum), ("minimum", torch.minimum)]:
    case(op, "special", [("a", [len(MA3)], MA3), ("b", [len(MB3)], MB3)], fn(t32(MA3), t32(MB3)),
         version=3)
xa, xb = t32(MA3).requires_grad_(True), t32(MB3).requires_grad_(True)
torch.maximum(xa, xb).backward(torch.ones(len(MA3)))
case("max_share", "special", [("a", [len(MA3)], MA3), ("b", [len(MB3)], MB3)], xa.grad, version=3)
# Comparisons give a bool (0 or 1 here): a NaN operand makes each false but ne (true), -0 == +0,
# infinities compare as the extremes.
CA = [nan, 1.0, nan, -0.0, 0.0, inf, -inf, 2.0, -1.0, inf]
CB = [1.0, nan, nan, 0.0, -0.0, inf, -inf, 3.0, -1.0, 5.0]
for op, fn in [("eq", torch.eq), ("ne", torch.ne), ("lt", torch.lt), ("le", torch.le),
               ("gt", torch.gt), ("ge", torch.ge)]:
    case(op, "special", [("a", [len(CA)], CA), ("b", [len(CB)], CB)],
         fn(t32(CA), t32(CB)).float(), version=3)
# where and masked_fill pass the chosen element as its bits (NaN, infinities, -0).
W = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0]
wmask = torch.tensor(W) != 0
case("where", "special", [("cond", [len(W)], W), ("a", [len(CA)], CA), ("b", [len(CB)], CB)],
     torch.where(wmask, t32(CA), t32(CB)), version=3)
case("masked_fill", "special", [("a", [len(CA)], CA), ("mask", [len(W)], W)],
     t32(CA).masked_fill(wmask, -2.5), {"value": -2.5}, version=3)
# clamp: NaN stays NaN, infinities are clamped, min > max gives max, a missing bound bounds
# nothing.
case("clamp", "special", [("a", [len(S)], S)], torch.clamp(t32(S), min=-1.0, max=2.0),
     {"min": -1.0, "max": 2.0}, version=3)
case("clamp", "special_min_above_max", [("a", [len(S)], S)], torch.clamp(t32(S), min=1.0, max=-1.0),
     {"min": 1.0, "max": -1.0}, version=3)
case("clamp", "special_min_only", [("a", [len(S)], S)], torch.clamp(t32(S), min=0.0),
     {"min": 0.0}, version=3)
case("clamp", "special_max_only", [("a", [len(S)], S)], torch.clamp(t32(S), max=-0.0),
     {"max": -0.0}, version=3)
# cast to bool: NaN and infinities are true, +-0 false.
case("cast", "special", [("a", [len(S)], S)], t32(S).bool().float(), {"dtype": "bool"}, version=3)


# uniform and dropout: the counter hash as the op table states it, written here again in Python
# integers; dropout's mask applied as PyTorch applies its own (a * mask / (1 - p) in float32).
def pcg(x):
    s = (x * 747796405 + 2891336453) & 0xFFFFFFFF
    w = (((s >> ((s >> 28) + 4)) ^ s) * 277803737) & 0xFFFFFFFF
    return ((w >> 22) ^ w) & 0xFFFFFFFF


def stream_bits(seed, step, i):
    return pcg(pcg(i) ^ pcg(seed ^ pcg(step)))


def step_number(t):
    return 0 if not t > 0 else int(min(t, 4294967040.0))


for name, t in [("special_nan_step", nan), ("special_negative_step", -3.0),
                ("special_fraction_step", 2.75), ("special_inf_step", inf)]:
    u = [(stream_bits(11, step_number(t), i) >> 8) / 2.0**24 for i in range(6)]
    case("uniform", name, [("step", [], [t])], t32(u), {"shape": [6], "seed": 11}, version=3)
for seed in [2, 5]:
    keep = [(stream_bits(seed, 1, i) >> 8) >= math.ceil(0.5 * 2**24) for i in range(len(S))]
    mask = torch.tensor(keep, dtype=torch.float32).div_(1 - 0.5)
    case("dropout", "special_seed%d" % seed, [("a", [len(S)], S), ("step", [], [1.0])],
         t32(S) * mask, {"p": 0.5, "seed": seed}, version=3)
# gelu_grad(a, b) = b * gelu'(a): PyTorch's gelu backward with upstream gradient b.
ga, gb = S + [1.0], [1.0] * len(S) + [nan]
xa = t32(ga).requires_grad_(True)
F.gelu(xa).backward(t32(gb))
case("gelu_grad", "special", [("a", [len(ga)], ga), ("b", [len(gb)], gb)], xa.grad)

R = [[1.0, nan, 2.0, 3.0], [inf, 1.0, 2.0, 3.0], [inf, -inf, 1.0, 2.0]]
for op, fn in [("sum", torch.sum), ("mean", torch.mean)]:
    case(op, "special_axis1", [("a", [3, 4], flat(R))], fn(t32(R), dim=1), {"axis": 1})
    case(op, "special_axis0", [("a", [3, 4], flat(R))], fn(t32(R), dim=0), {"axis": 0})
    case(op, "empty_axis", [("a", [0, 3], [])], fn(torch.zeros(0, 3), dim=0), {"axis": 0})
case("sum", "special_whole", [("a", [3, 4], flat(R))], torch.sum(t32(R)))

MA, MB = [[nan, 1.0], [0.0, 1.0], [2.0, 3.0]], [[1.0, 2.0], [inf, 3.0]]
case("matmul", "special", [("a", [3, 2], flat(MA)), ("b", [2, 2], flat(MB))],
     t32(MA) @ t32(MB))
case("matmul", "empty_k", [("a", [2, 0], []), ("b", [0, 3], [])],
     torch.zeros(2, 0) @ torch.zeros(0, 3))

# matmul_q: a NaN or infinity in a row of a, and blocks whose f16 d is infinite (its zero
# weights decode to inf * 0 = NaN) beside ordinary ones; the weights as the gguf package decodes
# them, the product in float32 by PyTorch.
from gguf import GGMLQuantizationType
from gguf.quants import dequantize

QB = np.random.default_rng(3).integers(0, 256, size=(2, 210), dtype=np.uint8)
Q4 = QB[:, :144].copy()
Q4[0, 0:4] = np.array([0.25, 0.125], dtype=np.float16).view(np.uint8)  # d, dmin
Q4[1, 0:4] = np.array([inf, 0.0], dtype=np.float16).view(np.uint8)
Q6 = QB.copy()
Q6[0, 208:210] = np.array([0.03125], dtype=np.float16).view(np.uint8)
Q6[1, 208:210] = np.array([-inf], dtype=np.float16).view(np.uint8)
QA = np.linspace(-1.0, 1.0, 3 * 256, dtype=np.float32).reshape(3, 256)
QA[0, 5] = nan
QA[1, 7] = inf
for dtype, blocks in [(GGMLQuantizationType.Q4_K, Q4), (GGMLQuantizationType.Q6_K, Q6)]:
    with np.errstate(invalid="ignore", over="ignore"):
        w = dequantize(blocks, dtype).reshape(2, 256)
    case("matmul_q", "special_" + dtype.name.lower(),
         [("a", [3, 256], flat(QA)), ("b", [2, 256], [float(x) for x in blocks.reshape(-1)])],
         t32(QA) @ torch.from_numpy(w).t())

# matmul_fixed on integers (exact, in Python ints): halves round to even, the i32 extremes are
# exact (2^31 - 1 is written 2^31 here, which the feed's conversion to i32 saturates).
FA = [[3, 0], [5, 0], [-3, 0], [-5, 0], [7, 0], [2 ** 31 - 1, 0], [-2 ** 31, 0]]
FB = [[1], [0]]
case("matmul_fixed", "halves_and_extremes",
     [("a", [7, 2], [float(v) for row in FA for v in row]), ("b", [2, 1], [1.0, 0.0])],
     torch.tensor([2.0, 2.0, -2.0, -2.0, 4.0, 2.0 ** 30, -2.0 ** 30]), {"frac_bits": 1})

L = [[nan, inf, -inf], [-0.0, 1.5, 2.0]]
case("transpose", "special", [("a", [2, 3], flat(L))], t32(L).t(), version=1)
case("permute", "special", [("a", [2, 3], flat(L))], t32(L).permute(1, 0), {"dims": [1, 0]})
case("reshape", "special", [("a", [2, 3], flat(L))], t32(L).reshape(3, 2), {"shape": [3, 2]})


def life(grid):
    g = np.asarray(grid, dtype=np.float64)
    rows, cols = g.shape
    out = np.zeros_like(g)
    for r in range(rows):
        for c in range(cols):
            cells = [g[(r + dr) % rows, (c + dc) % cols] for dr in (-1, 0, 1) for dc in (-1, 0, 1)]
            if any(math.isnan(v) for v in cells):
                out[r, c] = nan
                continue
            n = sum(1 for k, v in enumerate(cells) if k != 4 and v > 0.5)
            alive = g[r, c] > 0.5
            out[r, c] = 1.0 if n == 3 or (alive and n == 2) else 0.0
    return torch.tensor(out, dtype=torch.float32)


G = [[nan, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0], [0, 0, 0, 1, 0, 0], [0, 0, 0, 1, 0, 0],
     [0, 0, 0, 1, 0, 0], [0, 0, 0, 0, 0, inf]]
case("life", "special", [("a", [6, 6], flat(G))], life(G), version=1)

for op, fn in [("softmax", torch.softmax), ("log_softmax", torch.log_softmax)]:
    case(op, "special", [("a", [5, 3], flat(ROWS))], fn(t32(ROWS), 1))
labels = [0.0, 0.0, 2.0, 0.0, 1.0]
ce = lambda logits, lab: F.cross_entropy(logits, torch.tensor(lab, dtype=torch.long))
case("cross_entropy", "special", [("a", [5, 3], flat(ROWS)), ("target", [5], labels)],
     ce(t32(ROWS), [0, 0, 2, 0, 1]))
FIN = [[1.0, -inf, 2.0], [1.0, 2.0, 3.0]]
case("cross_entropy", "neg_inf_logit", [("a", [2, 3], flat(FIN)), ("target", [2], [2.0, 0.0])],
     ce(t32(FIN), [2, 0]))
xl = t32(ROWS).requires_grad_(True)
ce(xl, [0, 0, 2, 0, 1]).backward(t32(1.0))
case("cross_entropy_grad", "special",
     [("a", [5, 3], flat(ROWS)), ("target", [5], labels), ("b", [], [1.0])], xl.grad)

P, G1 = [1.0, nan, 1.0, inf, 2.0], [nan, 1.0, inf, 1.0, -0.5]


def opt_step(make, p, g):
    w = torch.nn.Parameter(t32(p))
    o = make([w])
    w.grad = t32(g)
    o.step()
    return w.detach(), o.state[w]


w, _ = opt_step(lambda ps: torch.optim.SGD(ps, lr=0.1), P, G1)
case("sgd_update", "special", [("param", [5], P), ("grad", [5], G1)], w, {"lr": 0.1})
w, st = opt_step(lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9), P, G1)
mom_in = [("param", [5], P), ("grad", [5], G1), ("velocity", [5], [0.0] * 5), ("t", [], [1.0])]
case("momentum_update", "special", mom_in, w, {"lr": 0.1, "momentum": 0.9})
case("momentum_velocity", "special", mom_in, st["momentum_buffer"], {"lr": 0.1, "momentum": 0.9})
w, st = opt_step(lambda ps: torch.optim.Adam(ps, lr=0.01), P, G1)
adam_in = [("param", [5], P), ("grad", [5], G1), ("m", [5], [0.0] * 5), ("v", [5], [0.0] * 5),
           ("t", [], [1.0])]
case("adam_update", "special", adam_in, w, {"lr": 0.01})
case("adam_m", "special", adam_in, st["exp_avg"], {"lr": 0.01})
case("adam_v", "special", adam_in, st["exp_avg_sq"], {"lr": 0.01})

# Version 4 data movement: elements move as bits. torch has no negative-step slicing, so the
# slice is gathered through the indices Python's own range slicing gives.
SL = {"starts": [None, -1], "stops": [None, None], "steps": [-1, -2]}
rows, cols = list(range(2))[::-1], list(range(3))[-1::-2]
case("slice", "special", [("a", [2, 3], flat(L))], t32(L)[rows][:, cols], SL, version=4)
SRC = [[inf, nan], [-0.0, -inf]]
scattered = t32(L).clone()
for i, r in enumerate(rows):
    for j, c in enumerate(cols):
        scattered[r, c] = SRC[i][j]
case("slice_scatter", "special", [("a", [2, 3], flat(L)), ("src", [2, 2], flat(SRC))], scattered,
     SL, version=4)
case("flip", "special", [("a", [2, 3], flat(L))], torch.flip(t32(L), [0, 1]), {"axes": [0, 1]},
     version=4)
case("pad", "special", [("a", [2, 3], flat(L))], F.pad(t32(L), (0, 1, 1, 0), value=-2.5),
     {"pads": [[1, 0], [0, 1]], "value": -2.5}, version=4)

# Version 4 index ops: gathers move elements as bits; index_add and scatter_add add in index order
# (the sums here are exact, so any order gives them): inf + -inf and a NaN term give NaN.
A32 = t32(L)
IDX = [2, 0, 2, 1]
case("index_select", "special", [("a", [3, 2], flat(L)), ("index", [4], IDX)],
     torch.index_select(A32.reshape(3, 2), 0, torch.tensor(IDX)), {"axis": 0}, version=4)
GI = [[1, 0, 1], [0, 0, 1]]
case("gather", "special", [("a", [2, 3], flat(L)), ("index", [2, 3], flat(GI))],
     torch.gather(A32, 0, torch.tensor(GI)), {"axis": 0}, version=4)
IA = [1, 0, 1]
IS = [[-inf, 1.0, nan], [inf, 0.5, -0.0], [1.0, 2.0, 0.25]]
case("index_add", "special", [("a", [2, 3], flat(L)), ("index", [3], IA), ("src", [3, 3], flat(IS))],
     A32.index_add(0, torch.tensor(IA), t32(IS)), {"axis": 0}, version=4)
SI = [[2, 2, 0], [1, 1, 1]]
SS = [[-inf, 1.0, nan], [inf, -0.0, 0.5]]
case("scatter_add", "special",
     [("a", [2, 3], flat(L)), ("index", [2, 3], flat(SI)), ("src", [2, 3], flat(SS))],
     A32.scatter_add(1, torch.tensor(SI), t32(SS)), {"axis": 1}, version=4)
# Version 5's shift: out[i] = a[i - shifts], the element past an edge per boundary. Wrap is
# torch.roll; zero and clamp gather through index tensors (clamped, or masked to zero).
rows_idx = torch.arange(2).reshape(2, 1) - 1
cols_idx = torch.arange(3).reshape(1, 3) + 1
inside = (rows_idx >= 0) & (rows_idx < 2) & (cols_idx >= 0) & (cols_idx < 3)
clamped = t32(L)[rows_idx.clamp(0, 1), cols_idx.clamp(0, 2)]
case("shift", "special_wrap", [("a", [2, 3], flat(L))], torch.roll(t32(L), (1, -1), (0, 1)),
     {"shifts": [1, -1], "boundary": "wrap"}, version=5)
case("shift", "special_zero", [("a", [2, 3], flat(L))], torch.where(inside, clamped, 0.0),
     {"shifts": [1, -1], "boundary": "zero"}, version=5)
case("shift", "special_clamp", [("a", [2, 3], flat(L))], clamped,
     {"shifts": [1, -1], "boundary": "clamp"}, version=5)
# Version 6's integer bit operations: i32 extremes, and shift counts inside and outside [0, 32)
# (torch's rules: 0 to the left, the sign to the right). Values as f32 (2^31 - 1 is fed clamped).
I = [-2147483648, 2147483647, -1, 0, 1, 12, -8, 1073741824]
IB = [-1, 2147483647, 5, -2147483648, 31, 10, 3, 2]
COUNTS = [0, 1, 31, 32, -1, 33, 4, 30]
i32 = lambda v: torch.tensor(v, dtype=torch.int32)
for op, fn, b in [("bitwise_and", torch.bitwise_and, IB), ("bitwise_or", torch.bitwise_or, IB),
                  ("bitwise_xor", torch.bitwise_xor, IB),
                  ("shift_left", torch.bitwise_left_shift, COUNTS),
                  ("shift_right", torch.bitwise_right_shift, COUNTS)]:
    case(op, "special_i32", [("a", [8], flat(I)), ("b", [8], flat(b))],
         fn(i32(I), i32(b)).to(torch.float64), version=6)
# arange: each element's index along the axis.
case("arange", "special_f32", [], torch.arange(3, dtype=torch.float32).expand(2, 3),
     {"shape": [2, 3], "axis": 1, "dtype": "f32"}, version=6)
# Version 6's butterfly: out[.., i, ..] = a[.., i ^ mask, ..], elements moved as bits.
case("butterfly", "special_rows", [("a", [2, 3], flat(L))], t32(L)[torch.arange(2) ^ 1],
     {"mask": 1, "axis": 0}, version=6)
case("butterfly", "special_cols", [("a", [3, 2], flat(np.array(L).T))],
     t32(np.array(L).T.tolist())[:, torch.arange(2) ^ 1], {"mask": 1, "axis": 1}, version=6)
# cumsum: a NaN, and +inf meeting -inf, make every later running sum NaN.
CS = [[1.5, nan, 2.0, -0.0], [inf, 1.0, -inf, 2.0], [-0.0, -0.0, 3.0, inf]]
case("cumsum", "special", [("a", [3, 4], flat(CS))], torch.cumsum(t32(CS), 1), {"axis": 1},
     version=5)
case("cumsum", "special_axis0", [("a", [3, 4], flat(CS))], torch.cumsum(t32(CS), 0), {"axis": 0},
     version=5)
# Version 4's concat and stack move elements as bits, in list order.
CB = [[-0.0, nan, -inf]]
case("concat", "special", [("x0", [2, 3], flat(L)), ("x1", [1, 3], flat(CB))],
     torch.cat([t32(L), t32(CB)], 0), {"axis": 0}, version=4)
SB = [[inf, -0.0, 0.0], [nan, 1.0, -inf]]
case("stack", "special", [("x0", [2, 3], flat(L)), ("x1", [2, 3], flat(SB))],
     torch.stack([t32(L), t32(SB)], -1), {"axis": -1}, version=4)


def lit(v):
    if math.isnan(v):
        return "kNaN"
    if math.isinf(v):
        return "kInf" if v > 0 else "-kInf"
    if v == 0:
        return "-0.0f" if math.copysign(1, v) < 0 else "0.0f"
    return repr(float(np.float32(v))) + "f"


def floats(vs):
    return "{" + ", ".join(lit(v) for v in vs) + "}"


def shape(s):
    return "{" + ", ".join(str(d) for d in s) + "}"


import json

print("// Generated by tools/special_value_expectations.py (torch " + torch.__version__.split("+")[0]
      + ", float32); do not edit.")
for op, name, inputs, out, attrs, version in cases:
    ins = ", ".join("{\"%s\", %s, %s}" % (n, shape(s), floats(v)) for n, s, v in inputs)
    print("{\"%s\", \"%s\", {%s}, R\"(%s)\", %d, %s}," % (op, name, ins, json.dumps(attrs), version,
                                                     floats(out)))
