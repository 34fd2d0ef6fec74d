"""The 784-256-10 batch-64 Adam step from Python: ``scellis.torch.compile_step`` prepared on the
GPU at 8 and 64 steps per submission, against PyTorch on the same GPU in the same process (eager,
a CUDA graph of the whole step, torch.compile). The C++ session's figure for the same step comes
from ``scellis_bench_mlp`` in the same job (bench/run_python_bench.sh), on the GPU and on the
null backend (no device: the host's share of a step, which is what the Python layer adds to).

Every configuration trains its own copy of one model, from the same initial weights, on the same
fresh random batches (pixels in [0, 1), labels 0..9), made before timing; each is warmed up, then
timed over ``--steps`` steps with a synchronisation at the end (the GPU's work is in the time).
The captured step's losses over the first 20 batches are checked against eager PyTorch's on the
GPU (float32 rounding), so a fast wrong answer cannot pass unnoticed. Prints one
JSON object per configuration.
"""
import argparse
import copy
import json
import time

import torch
import torch.nn.functional as F

import scellis
import scellis.torch as st


def model_and_optimizer(device, seed):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 10)).to(device)
    return model, torch.optim.Adam(model.parameters(), lr=1e-3)


def batches(count, batch, seed):
    g = torch.Generator().manual_seed(seed)
    return [(torch.rand(batch, 784, generator=g), torch.randint(0, 10, (batch,), generator=g))
            for _ in range(count)]


def timed(fn, steps):
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) / steps * 1e6


def scellis_rows(data, per_submission, backend, seed, steps):
    model, optimizer = model_and_optimizer("cpu", seed)
    step = st.compile_step(model, F.cross_entropy, optimizer, tier="prod", backend=backend)
    step.prepare(*data[0])
    chunks = [data[i:i + per_submission] for i in range(0, len(data), per_submission)]

    def run(n_chunks):
        # steps() returns when the submission's losses are read back: the GPU's work is done.
        for c in range(n_chunks):
            step.steps(chunks[c % len(chunks)])

    run(max(1, 64 // per_submission))
    us = timed(lambda: run(steps // per_submission), steps)
    row = {"impl": "scellis compile_step (python)", "backend": step.backend,
           "executor": step.executor, "steps_per_submission": per_submission, "steps": steps,
           "us_per_step": round(us, 2)}
    step.dispose()
    return row


def agreement(data, backend, seed):
    """Losses of 20 captured steps against 20 eager CUDA steps from the same weights."""
    model, optimizer = model_and_optimizer("cpu", seed)
    twin, twin_opt = model_and_optimizer("cuda", seed)
    step = st.compile_step(model, F.cross_entropy, optimizer, tier="prod", backend=backend)
    step.prepare(*data[0])
    got = step.steps(data[:20])
    step.dispose()
    want = []
    for x, y in data[:20]:
        twin_opt.zero_grad()
        loss = F.cross_entropy(twin(x.cuda()), y.cuda())
        loss.backward()
        twin_opt.step()
        want.append(loss.item())
    rel = max(abs(a - b) / abs(b) for a, b in zip(got, want))
    return {"agreement": "compile_step vs torch eager cuda", "steps": 20, "max_rel": rel,
            "first": [got[0], want[0]], "last": [got[-1], want[-1]]}


def torch_rows(data, seed, steps):
    gpu = [(x.cuda(), y.cuda()) for x, y in data]
    rows = []

    def eager_step(model, optimizer):
        def step(x, y):
            optimizer.zero_grad(set_to_none=False)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            return loss
        return step

    # Eager.
    model, optimizer = model_and_optimizer("cuda", seed)
    step = eager_step(model, optimizer)

    def run_eager(n):
        for i in range(n):
            step(*gpu[i % len(gpu)])
        torch.cuda.synchronize()
    run_eager(64)
    rows.append({"impl": "torch eager", "us_per_step": round(timed(lambda: run_eager(steps), steps), 2)})

    # A CUDA graph of the whole step (forward, backward, Adam with capturable state), replayed.
    model, _ = model_and_optimizer("cuda", seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=True)
    step = eager_step(model, optimizer)
    x_static, y_static = (t.clone() for t in gpu[0])
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step(x_static, y_static)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step(x_static, y_static)

    def run_graph(n):
        for i in range(n):
            x, y = gpu[i % len(gpu)]
            x_static.copy_(x)
            y_static.copy_(y)
            graph.replay()
        torch.cuda.synchronize()
    run_graph(64)
    rows.append({"impl": "torch cuda graph", "us_per_step": round(timed(lambda: run_graph(steps), steps), 2)})

    # torch.compile of the step (inductor, default mode).
    model, optimizer = model_and_optimizer("cuda", seed)
    compiled = torch.compile(eager_step(model, optimizer))

    def run_compiled(n):
        for i in range(n):
            compiled(*gpu[i % len(gpu)])
        torch.cuda.synchronize()
    run_compiled(64)
    rows.append({"impl": "torch.compile (inductor)",
                 "us_per_step": round(timed(lambda: run_compiled(steps), steps), 2)})
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=2048)
    ap.add_argument("--backend", default="webgpu")
    ap.add_argument("--seed", type=int, default=20261201)
    a = ap.parse_args()
    data = batches(256, 64, a.seed)
    # Scellis first, before PyTorch has made a CUDA context in the process; the null backend
    # (planning, feeding and reading back, no device) isolates the host's share of a step.
    for backend in (a.backend, "null"):
        for per in (8, 64):
            print(json.dumps(scellis_rows(data, per, backend, a.seed, a.steps)), flush=True)
    print(json.dumps(agreement(data, a.backend, a.seed)), flush=True)
    for row in torch_rows(data, a.seed, a.steps):
        print(json.dumps({**row, "device": torch.cuda.get_device_name()}), flush=True)
    print(json.dumps({"versions": {"torch": torch.__version__, "scellis": scellis.__version__
                                   if hasattr(scellis, "__version__") else "0.1.0"}}))


if __name__ == "__main__":
    main()
