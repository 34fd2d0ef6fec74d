#!/usr/bin/env python3
"""Writes a document whose tensors are larger than a storage binding (4 GiB - 1 on an H200), so
that its kernels run in tiles: the data comes from `uniform` on the device (no inline data), whose
kernel, over the cap too, runs in tiles of elements. src/execplan/tiling_plan_test.cpp plans the
same documents (SCALE 1) under an H200's cap; keep the two alike.

usage: bench/tiling/over_cap_doc.py CASE [SCALE] > doc.json
  CASE   matmul_k   a [16, K] @ b [K, 32768], b over the cap: tiles along K
         matmul_n   a [16, 4096] @ w^T, w [N, 4096] over the cap: tiles along N
         sum        the sum of x [E], x over the cap: the tree's lanes carried across tiles
         sum_axis   the sum of x [R, 32768] over axis 0, x over the cap: tiles along the axis
         softmax    softmax of x [R, 32768] over the last axis, x over the cap: tiles of rows
         matmul_batch  a [64, 4, 4096] @ b [64, 4096, 4096], b over the cap: tiles of whole
                    products of the batch
         cumsum     cumsum of x [R, 32768] along axis 0, x over the cap: tiles along the axis
                    carrying the running sums (read back as each row's sum)
         cross_entropy  the loss of logits [R, 32768] over the cap with labels r % 32768: tiles of
                    whole rows carrying the tree's lanes
         cross_entropy_grad  the loss and its gradient (upstream gradient R, so each row is
                    softmax - onehot) of the same logits, one kernel (merge-loss-gradient) in
                    tiles of whole rows writing their rows of the gradient; y is each gradient
                    row's sum (0 up to rounding), `loss` the loss
  SCALE  divides the sizes (1 = over the H200's cap; larger values make small documents to try
         the script anywhere)
"""
import json
import sys

CASES = ("matmul_k", "matmul_n", "sum", "sum_axis", "softmax", "matmul_batch", "cumsum",
         "cross_entropy", "cross_entropy_grad")


def uniform(node_id, shape, seed):
    # uniform - 0.5: signed values, so sums cancel as real data does.
    return [{"id": node_id, "op": "uniform", "shape": shape, "seed": seed, "step": 0},
            {"id": node_id + 1, "op": "sub", "a": node_id, "scalar": 0.5}]


def main():
    case = sys.argv[1] if len(sys.argv) > 1 else ""
    if case not in CASES:
        sys.exit(__doc__)
    scale = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    nodes = [{"id": 0, "op": "input", "name": "step", "shape": [], "data": [0.0]}]
    if case == "matmul_k":
        k = 36864 // scale
        nodes += uniform(1, [16, k], 1) + uniform(3, [k, 32768 // scale], 2)
        nodes.append({"id": 5, "op": "matmul", "a": 2, "b": 4})
    elif case == "matmul_n":
        n = 300000 // scale
        nodes += uniform(1, [16, 4096], 1) + uniform(3, [n, 4096], 2)
        nodes.append({"id": 5, "op": "transpose", "a": 4})
        nodes.append({"id": 6, "op": "matmul", "a": 2, "b": 5})
    elif case == "sum":
        nodes += uniform(1, [1300000000 // scale], 1)
        nodes.append({"id": 3, "op": "sum", "a": 2})
    elif case == "matmul_batch":
        n = 4096 // scale
        nodes += uniform(1, [64, 4, n], 1) + uniform(3, [64, n, n], 2)
        nodes.append({"id": 5, "op": "matmul", "a": 2, "b": 4})
    elif case == "cumsum":
        nodes += uniform(1, [40000 // scale, 32768], 1)
        nodes.append({"id": 3, "op": "cumsum", "a": 2, "axis": 0})
    elif case == "cross_entropy":
        rows = 40000 // scale
        nodes += uniform(1, [rows, 32768], 1)
        nodes.append({"id": 3, "op": "input", "shape": [rows],
                      "data": [float(r % 32768) for r in range(rows)]})
        nodes.append({"id": 4, "op": "cross_entropy", "a": 2, "target": 3})
    elif case == "cross_entropy_grad":
        rows = 40000 // scale
        nodes += uniform(1, [rows, 32768], 1)
        nodes.append({"id": 3, "op": "input", "shape": [rows],
                      "data": [float(r % 32768) for r in range(rows)]})
        nodes.append({"id": 4, "op": "cross_entropy", "a": 2, "target": 3})
        nodes.append({"id": 5, "op": "input", "shape": [], "data": [float(rows)]})
        nodes.append({"id": 6, "op": "cross_entropy_grad", "a": 2, "target": 3, "b": 5})
        nodes.append({"id": 7, "op": "sum", "a": 6, "axis": 1})
    elif case == "sum_axis":
        nodes += uniform(1, [40000 // scale, 32768], 1)
        nodes.append({"id": 3, "op": "sum", "a": 2, "axis": 0})
    else:
        nodes += uniform(1, [40000 // scale, 32768], 1)
        nodes.append({"id": 3, "op": "softmax", "a": 2})
    out = nodes[-1]["id"]
    if case in ("softmax", "cumsum"):
        # The whole result is 5 GB: read back a sum per row instead (the sum itself tiles too).
        nodes.append({"id": out + 1, "op": "sum", "a": out, "axis": 1})
        out += 1
    outputs = [{"name": "y", "id": out}]
    if case == "cross_entropy_grad":
        outputs.append({"name": "loss", "id": 4})
    # cumsum is an op of version 5.
    json.dump({"version": 5 if case == "cumsum" else 3, "name": "over_cap_" + case, "nodes": nodes,
               "outputs": outputs}, sys.stdout)


if __name__ == "__main__":
    main()
