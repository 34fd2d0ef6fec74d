"""Seed 003's MLP trained from Python on Fashion-MNIST: 784-256-10, ReLU, softmax cross-entropy,
Adam, batches of 64, weights and Adam's moments resident in a prepared session, 64 steps per
submission; then the test split evaluated by the engine with the trained weights.

    .venv/bin/python examples/python/fashion_mlp.py [--steps N] [--backend auto|cpu|webgpu]

The backward is written with the op table's gradient ops (cross_entropy_grad, positive), as the
engine's own autodiff writes it for a workflow's train section.
"""
import argparse
import time

import numpy as np

import scellis

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--steps", type=int, default=937, help="training steps (937 batches of 64: one epoch)")
p.add_argument("--backend", default="auto")
p.add_argument("--tier", default="prod")
p.add_argument("--allow-software-adapter", action="store_true")
a = p.parse_args()

train = scellis.load_dataset("fashion-mnist", "train")
test = scellis.load_dataset("fashion-mnist", "test")
print(f"train {train['images'].shape}, test {test['images'].shape}")

batch, hidden, classes, lr = 64, 256, 10, 1e-3
rng = np.random.default_rng(0)


def kaiming(fan_in, *shape):  # PyTorch's nn.Linear default: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    bound = 1 / np.sqrt(fan_in)
    return rng.uniform(-bound, bound, size=shape).astype(np.float32)


init = {"w1": kaiming(784, 784, hidden), "b1": kaiming(784, hidden),
        "w2": kaiming(hidden, hidden, classes), "b2": kaiming(hidden, classes)}

g = scellis.Graph()
x, labels = g.input("x", (batch, 784)), g.input("labels", (batch,))
w = {k: g.param(k, v) for k, v in init.items()}
t = g.input("t", np.float32(1.0))
pre = x @ w["w1"] + w["b1"]
h = pre.relu()
logits = h @ w["w2"] + w["b2"]
loss = logits.cross_entropy(labels)
dlogits = logits.cross_entropy_grad(labels, g.full((), 1.0))
dpre = (dlogits @ w["w2"].T) * pre.positive()
grads = {"w2": h.T @ dlogits, "b2": dlogits.sum(0), "w1": x.T @ dpre, "b1": dpre.sum(0)}
carry = {t: t + 1.0}
for k, v in init.items():
    m, s = g.param(k + ".m", np.zeros_like(v)), g.param(k + ".v", np.zeros_like(v))
    carry[w[k]], carry[m], carry[s] = g.adam(w[k], grads[k], m, s, t, lr=lr)

order = rng.permutation(len(train["labels"]))
steps = min(a.steps, len(order) // batch)
start = time.perf_counter()
with g.prepare(feeds=[x, labels], carry=carry, tier=a.tier, backend=a.backend,
               allow_software_adapter=a.allow_software_adapter, loss=loss) as session:
    print(f"backend {session.backend}, executor {session.executor}, fallback: {session.fallback_reason}")
    losses = []
    for first in range(0, steps, scellis.MAX_STEPS_PER_SUBMISSION):
        idx = [order[(first + i) * batch:(first + i + 1) * batch]
               for i in range(min(scellis.MAX_STEPS_PER_SUBMISSION, steps - first))]
        out = session.run_steps([{"x": train["images"][j], "labels": train["labels"][j]} for j in idx])
        losses.extend(out["loss"].ravel().tolist())
        print(f"  step {first + len(idx):4d}/{steps}  loss {np.mean(losses[-len(idx):]):.4f}", flush=True)
    trained = {k: session.download(k) for k in init}
seconds = time.perf_counter() - start
print(f"{steps} steps in {seconds:.1f} s ({steps / seconds:.0f} steps/s); "
      f"loss {np.mean(losses[:10]):.4f} (first 10) -> {np.mean(losses[-10:]):.4f} (last 10)")

# The test split through the engine: the trained weights as graph constants, 10000 rows at once.
e = scellis.Graph()
tx = e.input("x", test["images"])
tw = {k: e.input(k, v) for k, v in trained.items()}
predicted = (tx @ tw["w1"] + tw["b1"]).relu() @ tw["w2"] + tw["b2"]
r = e.run(tier=a.tier, backend=a.backend, allow_software_adapter=a.allow_software_adapter,
          logits=predicted)
accuracy = float((r.outputs["logits"].argmax(1) == test["labels"]).mean())
print(f"test accuracy {accuracy:.4f} ({r.backend}, {r.executor})")
