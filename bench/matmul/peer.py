"""PyTorch's side of the matmul benchmark: torch.matmul in fp32 on the GPU, timed with CUDA events
(a second's warm-up, then RUNS timed runs of STEPS matmuls each; the median run per matmul), with
TF32 off (the comparison: full fp32, like Scellis) and on (labelled: cuBLAS's tensor-core path, which
rounds the inputs to 10 mantissa bits). Prints one JSON object per shape and mode.

    python3 bench/matmul/peer.py [--quick] [--runs N] [--shape=MxKxN ...]

--shape replaces the shapes with the ones given, named as scellis_bench_matmul names them.
"""
import argparse
import json
import math
import statistics
import time

import torch

SHAPES = [("1024^3", 1024, 1024, 1024), ("2048^3", 2048, 2048, 2048),
          ("4096^3", 4096, 4096, 4096), ("64x784x256", 64, 784, 256),
          ("8192x784x4096", 8192, 784, 4096), ("8192x4096x4096", 8192, 4096, 4096)]
QUICK = [("64x784x256", 64, 784, 256), ("129x65x33", 129, 65, 33), ("256^3", 256, 256, 256)]


def time_matmul(m, k, n, runs):
    g = torch.Generator(device="cuda").manual_seed(7)
    a = torch.rand(m, k, device="cuda", generator=g) * 2 - 1
    b = torch.rand(k, n, device="cuda", generator=g) * 2 - 1
    out = torch.empty(m, n, device="cuda")
    flops = 2.0 * m * k * n
    steps = int(min(64, max(1, math.ceil(2e11 / flops))))  # as scellis_bench_matmul
    # Warmed as scellis_bench_matmul is: back to back for a second (bench/warm_up.h).
    torch.matmul(a, b, out=out)  # cuBLAS's handle and workspace made before the second
    torch.cuda.synchronize()
    start = time.monotonic()
    while time.monotonic() - start < 1.0:
        for _ in range(steps):
            torch.matmul(a, b, out=out)
        torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(steps):
            torch.matmul(a, b, out=out)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / 1e3 / steps)
    median = statistics.median(times)
    return {"median_ms": median * 1e3, "best_ms": min(times) * 1e3,
            "tflops": flops / median / 1e12, "steps_per_submission": steps}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--shape", action="append", default=[])
    args = p.parse_args()
    device = torch.cuda.get_device_name()
    shapes = [(s, *map(int, s.split("x"))) for s in args.shape]
    for name, m, k, n in (shapes or (QUICK if args.quick else SHAPES)):
        for tf32 in (False, True):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            row = {"shape": name, "m": m, "k": k, "n": n, "peer": "torch.matmul",
                   "mode": "fp32, TF32 on" if tf32 else "fp32, TF32 off",
                   "device": device, "torch": torch.__version__, "runs": args.runs}
            row.update(time_matmul(m, k, n, args.runs))
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
