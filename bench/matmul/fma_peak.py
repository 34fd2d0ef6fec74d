"""The ceiling a matmul written in WGSL can reach on this device: a kernel of multiply-adds alone,
with no memory traffic in its loop, run through the engine as a user op (`scellis run
--gpu-timestamps`), so that its WGSL goes through the same Dawn, Tint and driver compiler as the
matmul kernels. Each invocation holds CHAINS independent chains of `a = a * m + c` (vec4 registers,
as the register-blocked matmul's accumulators are), steps ITER times over UNROLL written-out
multiply-adds per chain, and returns the sum of its chains, so that nothing can be left out. Its
input is a parameter of ones (a buffer: the compiler cannot fold it), and the run's output is the
sum of every invocation's result.

Every case's sum is checked against the same chains computed in float64 (relative difference
under 1e-3; a loop left out would be off by a third). TFLOP/s from the dispatch's GPU time, the
best of RUNS runs.

    python3 bench/matmul/fma_peak.py [--scellis dist/scellis] [--runs 3] [--quick]

Prints one JSON object per case. --quick: a small grid, for a software adapter.
"""
import argparse
import json
import pathlib
import subprocess
import struct
import tempfile


def wgsl(chains, iterations, unroll, builtin_fma):
    vecs = chains // 4
    step = "fma(a{i}, m, c)" if builtin_fma else "a{i} * m + c"
    src = ("fn fmapeak(index: u32) -> f32 {\n  let x = u_at(index);\n"
           "  let m = vec4<f32>(0.9999 + x * 1e-7);\n  let c = vec4<f32>(1e-7 * x);\n")
    for i in range(vecs):
        src += f"  var a{i} = vec4<f32>(x + {i}.0, x - {i}.0, x * {i + 1}.0, x + 0.5);\n"
    src += f"  for (var t = 0u; t < {iterations}u; t = t + 1u) {{\n"
    for _ in range(unroll):
        for i in range(vecs):
            src += f"    a{i} = {step.format(i=i)};\n"
    src += "  }\n  var s = vec4<f32>(0.0);\n"
    for i in range(vecs):
        src += f"  s = s + a{i};\n"
    return src + "  return s.x + s.y + s.z + s.w;\n}\n"


def expected(x, chains, steps):
    """The kernel's output for input x, in float64 (its constants rounded to f32 as the kernel's)."""
    f32 = lambda v: struct.unpack("f", struct.pack("f", v))[0]
    m, c = f32(0.9999 + f32(x * f32(1e-7))), f32(f32(1e-7) * x)
    total = 0.0
    for i in range(chains // 4):
        for a in (f32(x + i), f32(x - i), f32(x * (i + 1)), f32(x + 0.5)):
            # a_{t+1} = a_t m + c, in closed form: a_n = a_0 m^n + c (m^n - 1) / (m - 1)
            mn = m ** steps
            total += a * mn + c * (mn - 1) / (m - 1)
    return total


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--scellis", default="dist/scellis")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--quick", action="store_true")
    args = p.parse_args()
    n = 1 << (12 if args.quick else 21)
    iterations = 8 if args.quick else 512
    cases = [(32, 4, False), (64, 2, False), (64, 2, True), (16, 8, False)]
    for chains, unroll, builtin_fma in cases:
        doc = {"version": 6, "name": "fma_peak", "determinism": "prod",
               "ops": {"fmapeak": {
                   "inputs": [{"name": "u", "dtype": "f32", "rank": 1}], "shape": "u",
                   "dtype": "f32", "tolerance": "loose",
                   "wgsl": wgsl(chains, iterations, unroll, builtin_fma),
                   "reference": {"nodes": [{"id": 0, "op": "input", "name": "u"}],
                                 "output": 0}}},
               "nodes": [{"id": 0, "op": "param", "name": "u", "shape": [n],
                          "init": {"kind": "ones"}},
                         {"id": 1, "op": "fmapeak", "u": 0},
                         {"id": 2, "op": "sum", "a": 1}],
               "outputs": [{"name": "total", "id": 2}]}
        best = None
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / "fma_peak.json"
            path.write_text(json.dumps(doc))
            for _ in range(args.runs):
                out = subprocess.run([args.scellis, "run", str(path), "--backend=webgpu",
                                      "--allow-software-adapter", "--gpu-timestamps", "--json"],
                                     check=True, capture_output=True, text=True).stdout
                r = json.loads(out)
                kernels = r["stats"]["gpu_timestamps"]["by_kernel"]
                us = next(v["busy_us"] for k, v in kernels.items() if k.endswith("_fmapeak"))
                best = us if best is None else min(best, us)
        total, steps = r["outputs"]["total"]["data"][0], iterations * unroll
        want = n * expected(1.0, chains, steps)
        worst = abs(total - want) / abs(want)
        flop = 2.0 * n * chains * steps
        print(json.dumps({"case": f"{chains} chains, {unroll} written out, "
                                  f"{'fma()' if builtin_fma else 'a * m + c'}",
                          "invocations": n, "gflop": flop / 1e9, "best_us": best,
                          "tflops": flop / best / 1e6, "rel_error": worst,
                          "correct": worst < 1e-3, "adapter": r["stats"]["adapter"]}),
              flush=True)


if __name__ == "__main__":
    main()
