"""f16 compute on a GPU with shader-f16, against the CPU reference, bit for bit.

Conformance has no f16 cases (an adapter without shader-f16 refuses them by name), so this
script runs one graph of f16 elementwise ops, a cast, an f16 sum and an f16 matmul on the CPU
reference and on the GPU (debug tier), and compares every output's bits. Inputs are random f16 values
(seeded, fresh per run) with zeros of both signs, the largest and subnormal values appended.

    python3 bench/device/f16_check.py dist/scellis [seed]
"""
import json
import subprocess
import sys

import numpy as np

scellis = sys.argv[1]
seed = int(sys.argv[2]) if len(sys.argv) > 2 else int(np.random.default_rng().integers(2**31))
rng = np.random.default_rng(seed)
n = 4096
# Inline data is JSON: no NaN or infinities (divisions by the zeros make them).
special = np.array([0.0, -0.0, 65504.0, -65504.0, 6.1e-5, 6e-8, 1.0, 2.0, 0.0, 3.0],
                   dtype=np.float16)
a = np.concatenate([(rng.standard_normal(n - len(special)) * 8).astype(np.float16), special])
b = np.concatenate([(rng.standard_normal(n - len(special)) * 8).astype(np.float16), special[::-1]])


nodes = [{"id": 0, "op": "input", "name": "a", "dtype": "f16", "shape": [n],
          "data": [float(v) for v in a]},
         {"id": 1, "op": "input", "name": "b", "dtype": "f16", "shape": [n],
          "data": [float(v) for v in b]}]
outputs = []
for op in ["add", "sub", "mul", "div", "maximum", "minimum"]:
    nodes.append({"id": len(nodes), "op": op, "a": 0, "b": 1})
    outputs.append({"name": op, "id": len(nodes) - 1})
for op in ["neg", "relu"]:
    nodes.append({"id": len(nodes), "op": op, "a": 0})
    outputs.append({"name": op, "id": len(nodes) - 1})
nodes.append({"id": len(nodes), "op": "cast", "a": 0, "dtype": "f32"})
outputs.append({"name": "cast_f32", "id": len(nodes) - 1})
product = next(o["id"] for o in outputs if o["name"] == "mul")
nodes.append({"id": len(nodes), "op": "sum", "a": product})
outputs.append({"name": "sum_mul", "id": len(nodes) - 1})
# An f16 matmul [64, 128] @ [128, 32]: f32 products and sums, rounded once to f16.
ma = (rng.standard_normal((64, 128)) * 2).astype(np.float16)
mb = (rng.standard_normal((128, 32)) * 2).astype(np.float16)
nodes.append({"id": len(nodes), "op": "input", "name": "ma", "dtype": "f16", "shape": [64, 128],
              "data": [float(v) for v in ma.ravel()]})
nodes.append({"id": len(nodes), "op": "input", "name": "mb", "dtype": "f16", "shape": [128, 32],
              "data": [float(v) for v in mb.ravel()]})
nodes.append({"id": len(nodes), "op": "matmul", "a": len(nodes) - 2, "b": len(nodes) - 1})
outputs.append({"name": "matmul", "id": len(nodes) - 1})
doc = {"version": 3, "nodes": nodes, "outputs": outputs}
with open("/tmp/f16_check.json", "w") as f:
    json.dump(doc, f)


def run(backend):
    args = [scellis, "run", "/tmp/f16_check.json", "--tier=debug", f"--backend={backend}",
            "--no-record", "--json"]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"{backend}: exit {p.returncode}: {p.stderr[-2000:]}")
    return json.loads(p.stdout)


print(json.dumps({"seed": seed, "elements": n}))
cpu, gpu = run("cpu"), run("webgpu")
print(json.dumps({"gpu_backend": gpu.get("backend"), "adapter": gpu.get("stats", {}).get("adapter")}))
for out in outputs:
    name = out["name"]
    x = np.array([float(v) for v in cpu["outputs"][name]["data"]])
    y = np.array([float(v) for v in gpu["outputs"][name]["data"]])
    dtype = np.float32 if name == "cast_f32" else np.float16
    bx, by = x.astype(dtype).view(np.uint32 if dtype == np.float32 else np.uint16), \
        y.astype(dtype).view(np.uint32 if dtype == np.float32 else np.uint16)
    nan_both = np.isnan(x) & np.isnan(y)
    differ = int(np.count_nonzero((bx != by) & ~nan_both))
    print(json.dumps({"output": name, "elements": int(x.size), "bits_differ": differ}))
