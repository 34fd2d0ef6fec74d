"""PyTorch's side of the elementwise benchmark, on the GPU in fp32, timed with CUDA events (a
second's warm-up, then RUNS timed runs of STEPS steps each; the median run per step):
    copy   x.clone()                                  (the device's copy bandwidth)
    chain  torch.relu(a * b + c) * 0.5, eager and torch.compile'd (one fused Triton kernel)
    sum    x.sum(), eager and torch.compile'd
    rowsum x.view(16, -1).sum(1) (16 long rows), eager and torch.compile'd
    colsum x.view(-1, 64).sum(0) (64 long strided columns), eager and torch.compile'd
GB/s from the bytes a step must move, counted as scellis_bench_elementwise counts them (each input
read once, the output written once). Prints one JSON object per case and mode.

    python3 bench/elementwise/peer.py [--quick] [--runs N] [--log2=N]
"""
import argparse
import json
import statistics
import time

import torch


def chain(a, b, c):
    return torch.relu(a * b + c) * 0.5


def total(x):
    return x.sum()


def rowsum(x):
    return x.view(16, -1).sum(1)


def colsum(x):
    return x.view(-1, 64).sum(0)


def time_steps(fn, args, runs, steps):
    # Warmed as scellis_bench_elementwise is: back to back for a second (bench/warm_up.h).
    fn(*args)  # compiles, where torch.compile does, before the second starts
    torch.cuda.synchronize()
    start = time.monotonic()
    while time.monotonic() - start < 1.0:
        for _ in range(steps):
            fn(*args)
        torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(steps):
            fn(*args)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / 1e3 / steps)
    return statistics.median(times), min(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--log2", type=int, help="one size, 2^N elements (as the Scellis side takes it)")
    args = p.parse_args()
    device = torch.cuda.get_device_name()
    compiled_chain = torch.compile(chain)
    compiled_total = torch.compile(total)
    compiled_rowsum = torch.compile(rowsum)
    compiled_colsum = torch.compile(colsum)
    for log2_n in ([20] if args.quick else [args.log2] if args.log2 else [26, 28]):
        n = 1 << log2_n
        g = torch.Generator(device="cuda").manual_seed(7)
        a, b, c = (torch.rand(n, device="cuda", generator=g) * 2 - 1 for _ in range(3))
        rows = [("copy", "x.clone()", lambda x: x.clone(), (a,), 2),
                ("chain", "eager", chain, (a, b, c), 4),
                ("chain", "torch.compile", compiled_chain, (a, b, c), 4),
                ("sum", "eager", total, (a,), 1),
                ("sum", "torch.compile", compiled_total, (a,), 1),
                ("rowsum", "eager", rowsum, (a,), 1),
                ("rowsum", "torch.compile", compiled_rowsum, (a,), 1),
                ("colsum", "eager", colsum, (a,), 1),
                ("colsum", "torch.compile", compiled_colsum, (a,), 1)]
        for kind, mode, fn, inputs, words in rows:
            bytes_per_step = 4.0 * n * words
            median, best = time_steps(fn, inputs, args.runs, 20)
            print(json.dumps({"case": f"{kind} 2^{log2_n}", "kind": kind, "mode": mode,
                              "elements": n, "device": device, "torch": torch.__version__,
                              "runs": args.runs, "median_ms": median * 1e3,
                              "best_ms": best * 1e3, "gb_per_s": bytes_per_step / median / 1e9}),
                  flush=True)
        del a, b, c
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
