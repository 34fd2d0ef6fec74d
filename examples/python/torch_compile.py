"""torch.compile(model, backend="scellis") on an MLP for inference: the compiled model against
PyTorch eager on the same batch, what ran where, and a graph break for an op Scellis lacks.

    .venv/bin/python examples/python/torch_compile.py [--backend auto|cpu|webgpu]
"""
import argparse
import time

import torch

import scellis.torch

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--backend", default="auto")
p.add_argument("--allow-software-adapter", action="store_true")
a = p.parse_args()
options = {"tier": "prod", "backend": a.backend, "allow_software_adapter": a.allow_software_adapter}

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.GELU(), torch.nn.Linear(256, 10),
                            torch.nn.LogSoftmax(dim=-1)).eval()
x = torch.rand(64, 784)
compiled = torch.compile(model, backend="scellis", options=options)
with torch.no_grad():
    start = time.perf_counter()
    got = compiled(x)
    first = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(20):
        got = compiled(x)
    per_call = (time.perf_counter() - start) / 20
    want = model(x)
print(f"max |compiled - eager| = {(got - want).abs().max().item():.3g}")
print(f"first call (compile + prepare) {first * 1e3:.0f} ms, then {per_call * 1e3:.2f} ms per call")
print(scellis.torch.last_report())


def with_a_break(x):
    return torch.cumsum(torch.relu(x @ x.T), dim=1).softmax(dim=-1)


f = torch.compile(with_a_break, backend="scellis", options=options)
print(f"with a break: max |compiled - eager| = {(f(x[:8]) - with_a_break(x[:8])).abs().max().item():.3g}")
print(scellis.torch.last_report()["breaks"])
