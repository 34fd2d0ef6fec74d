"""A character-level model trained on examples/char_model/lighthouse.txt by the engine: a token
embedding (index_select), a position embedding, one causal self-attention head (a bool lower-
triangular mask applied with where), dropout after the embedding and on the attention weights,
a projection to the vocabulary and cross-entropy, Adam — all in examples/char_model/
char_model.json, whose train section the engine differentiates.

    .venv/bin/python examples/python/char_model.py [--steps N] [--backend auto|cpu|webgpu]

This script only reads the text, maps characters to indices and feeds batches (windows of the
text at positions from a seeded generator) with the step number, which dropout's masks depend on.
"""
import argparse
import json
import os
import time

import numpy as np

import scellis

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "char_model")

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--steps", type=int, default=500)
p.add_argument("--backend", default="auto")
p.add_argument("--tier", default=None, help="debug, prod or fast (default: the document's)")
p.add_argument("--allow-software-adapter", action="store_true")
p.add_argument("--seed", type=int, default=0, help="seed of the batch positions")
a = p.parse_args()

with open(os.path.join(HERE, "char_model.json")) as f:
    document = json.load(f)
with open(os.path.join(HERE, "lighthouse.txt")) as f:
    text = f.read()
vocab = sorted(set(text))
ids = np.array([vocab.index(c) for c in text], np.int32)
batch, context = document["dims"]["B"], document["dims"]["T"]
print(f"{len(text)} characters, vocabulary {len(vocab)}, batch {batch} x {context}")

rng = np.random.default_rng(a.seed)


def feeds(step):
    starts = rng.integers(0, len(ids) - context - 1, size=batch)
    windows = np.stack([ids[s:s + context + 1] for s in starts])
    return {"tokens": windows[:, :-1].ravel(), "targets": windows[:, 1:].ravel().astype(np.float32),
            "step": np.float32(step)}


session = scellis.prepare_workflow(document, backend=a.backend, tier=a.tier,
                                   allow_software_adapter=a.allow_software_adapter)
print(f"backend {session.backend}, executor {session.executor}, fallback: {session.fallback_reason}")
losses = []
start = time.perf_counter()
for first in range(0, a.steps, scellis.MAX_STEPS_PER_SUBMISSION):
    count = min(scellis.MAX_STEPS_PER_SUBMISSION, a.steps - first)
    out = session.run_steps([feeds(first + i + 1) for i in range(count)])
    losses.extend(out["loss"].ravel().tolist())
    print(f"  step {first + count:4d}/{a.steps}  loss {np.mean(losses[-count:]):.4f}", flush=True)
seconds = time.perf_counter() - start
print(f"{a.steps} steps in {seconds:.1f} s; loss {np.mean(losses[:10]):.4f} (first 10) -> "
      f"{np.mean(losses[-10:]):.4f} (last 10)")
session.dispose()
