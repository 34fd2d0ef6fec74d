"""A PyTorch model trained through a captured step: scellis.torch.compile_step captures forward,
cross-entropy, backward and Adam once; the step runs on Scellis, 64 per run, with weights
and moments resident; sync() writes them back and PyTorch evaluates the trained model.

    .venv/bin/python examples/python/compile_step.py [--steps N] [--backend auto|cpu|webgpu]
"""
import argparse
import time

import numpy as np
import torch

import scellis
import scellis.torch

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--steps", type=int, default=937, help="training steps (937 batches of 64: one epoch)")
p.add_argument("--backend", default="auto")
p.add_argument("--allow-software-adapter", action="store_true")
a = p.parse_args()

train = scellis.load_dataset("fashion-mnist", "train")
test = scellis.load_dataset("fashion-mnist", "test")
images, labels = torch.from_numpy(train["images"]), torch.from_numpy(train["labels"]).long()

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
step = scellis.torch.compile_step(model, torch.nn.CrossEntropyLoss(), optimizer, tier="prod",
                                  backend=a.backend, allow_software_adapter=a.allow_software_adapter)

order = torch.randperm(len(labels))
steps = min(a.steps, len(order) // 64)
batches = [(images[order[i * 64:(i + 1) * 64]], labels[order[i * 64:(i + 1) * 64]]) for i in range(steps)]
step.prepare(*batches[0])
print(f"backend {step.backend}, executor {step.executor}, fallback: {step.fallback_reason}")
start = time.perf_counter()
losses = step.steps(batches)
seconds = time.perf_counter() - start
step.sync()
step.dispose()
print(f"{steps} steps in {seconds:.1f} s ({steps / seconds:.0f} steps/s); "
      f"loss {np.mean(losses[:10]):.4f} (first 10) -> {np.mean(losses[-10:]):.4f} (last 10)")
print(f"optimizer.state step: {float(optimizer.state[model[0].weight]['step']):.0f}")
with torch.no_grad():
    predicted = model(torch.from_numpy(test["images"])).argmax(1).numpy()
print(f"test accuracy (PyTorch, synced weights) {(predicted == test['labels']).mean():.4f}")
