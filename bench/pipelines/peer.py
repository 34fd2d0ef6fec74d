"""Checks Scellis's answer to each of seed 002's workloads against the float64 NumPy oracle, then
times the same workload in PyTorch as a good PyTorch user would write it: eager, the whole loop
captured in one CUDA graph, and torch.compile of the step (looped in Python). Every PyTorch
answer is checked against the same oracle before its time is reported.

    python3 bench/pipelines/peer.py OUT_DIR jacobi heat life gray_scott

OUT_DIR/<workload>/ holds what scellis_bench_pipeline wrote: the starting state (its
initializers' values) and the state after one run, with index.json and scellis.json (its timing);
OUT_DIR/<workload>/unblocked/ the same for the run without temporal blocking, when it was made
(checked against the same oracle). Prints one JSON object per workload.
"""
import json
import pathlib
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import workloads  # noqa: E402


def load(folder, name):
    shape = json.loads((folder / "index.json").read_text())[name]
    return np.fromfile(folder / f"{name}.f32", np.float32).reshape(shape)


def max_error(got, want):
    got = np.asarray(got, np.float64)
    return float(np.max(np.abs(got - want)) / max(1.0, float(np.max(np.abs(want)))))


# ---- the PyTorch steps ----

def zero_neighbours(u):
    p = F.pad(u[None, None], (1, 1, 1, 1))[0, 0]
    return p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:]


def wrap_neighbours(u):
    return (torch.roll(u, 1, 0) + torch.roll(u, -1, 0)) + torch.roll(u, 1, 1) + torch.roll(u, -1, 1)


def torch_step(name):
    if name == "jacobi":
        return lambda u, q: ((zero_neighbours(u) + q) * 0.25,)
    if name == "heat":
        return lambda u: (u + workloads.HEAT_ALPHA * (zero_neighbours(u) - 4 * u),)
    if name == "life":
        def life(c):
            alive = c > 0.5
            a = alive.to(torch.float32)
            around = sum(torch.roll(torch.roll(a, dy, 0), dx, 1)
                         for dy in (-1, 0, 1) for dx in (-1, 0, 1) if dy or dx)
            return (((around == 3) | (alive & (around == 2))).to(torch.float32),)
        return life

    def gray_scott(u, v):
        uvv = u * v * v
        return (u + workloads.GS_DU * (wrap_neighbours(u) - 4 * u) - uvv + workloads.GS_F * (1 - u),
                v + workloads.GS_DV * (wrap_neighbours(v) - 4 * v) + uvv
                - (workloads.GS_F + workloads.GS_K) * v)
    return gray_scott


def timed(fn, reps):
    fn()
    torch.cuda.synchronize()
    ms = []
    for _ in range(reps):
        start = time.perf_counter()
        out = fn()
        torch.cuda.synchronize()
        ms.append((time.perf_counter() - start) * 1e3)
    return out, float(np.median(ms))


def peers(name, state, constants, iterations, want, reps):
    step = torch_step(name)
    dev = torch.device("cuda")
    start = [torch.tensor(s, device=dev) for s in state]
    consts = [torch.tensor(constants[k], device=dev) for k in sorted(constants)]

    def loop(fn):
        def run():
            s = tuple(start)
            for _ in range(iterations):
                s = fn(*s, *consts)
            return s
        return run

    rows = {}
    out, ms = timed(loop(step), reps)
    rows["torch_eager"] = (ms, max(max_error(o.cpu().numpy(), w) for o, w in zip(out, want)))

    static_in = [t.clone() for t in start]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        s = tuple(static_in)
        for _ in range(3):
            s = step(*s, *consts)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        s = tuple(static_in)
        for _ in range(iterations):
            s = step(*s, *consts)
        static_out = s

    def replay():
        graph.replay()
        return static_out
    out, ms = timed(replay, reps)
    rows["torch_cuda_graph"] = (ms, max(max_error(o.cpu().numpy(), w) for o, w in zip(out, want)))

    compiled = torch.compile(step)
    loop(compiled)()  # compiles outside the timing
    out, ms = timed(loop(compiled), reps)
    rows["torch_compile"] = (ms, max(max_error(o.cpu().numpy(), w) for o, w in zip(out, want)))
    return rows


def main():
    out_dir = pathlib.Path(sys.argv[1])
    for name in sys.argv[2:]:
        folder = out_dir / name
        mine = json.loads((folder / "scellis.json").read_text())
        state = [load(folder, f"{s}.initial") for s in workloads.STATE[name]]
        constants = {"q": load(folder, "q.initial")} if name == "jacobi" else {}
        iterations = mine["iterations"]
        start = time.perf_counter()
        want = workloads.oracle(name, state, constants, iterations)
        oracle_s = time.perf_counter() - start
        got = [load(folder, f"{workloads.OUTPUT_OF[s]}.after1") for s in workloads.STATE[name]]
        error = max(max_error(g, w) for g, w in zip(got, want))
        row = {"workload": name, "size": list(state[0].shape), "iterations": iterations,
               "scellis_ms": mine["median_ms"], "scellis_executor": mine["executor"],
               "scellis_kernels": mine["kernels"],
               "scellis_dispatches": mine["dispatches_per_run"],
               "scellis_submissions": mine["submissions_per_run"],
               "scellis_max_error": error, "oracle_seconds": oracle_s,
               "agrees": error <= 1e-4}
        row["scellis_iterations_per_dispatch"] = mine.get("iterations_per_dispatch", 1)
        unblocked = folder / "unblocked"
        if (unblocked / "scellis.json").exists():
            plain = json.loads((unblocked / "scellis.json").read_text())
            got = [load(unblocked, f"{workloads.OUTPUT_OF[s]}.after1")
                   for s in workloads.STATE[name]]
            row["scellis_unblocked_ms"] = plain["median_ms"]
            row["scellis_unblocked_dispatches"] = plain["dispatches_per_run"]
            row["scellis_unblocked_max_error"] = max(max_error(g, w) for g, w in zip(got, want))
            row["agrees"] = row["agrees"] and row["scellis_unblocked_max_error"] <= 1e-4
        if row["agrees"] and torch.cuda.is_available():
            for peer, (ms, err) in peers(name, state, constants, iterations, want, 5).items():
                row[f"{peer}_ms"] = ms
                row[f"{peer}_max_error"] = err
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
