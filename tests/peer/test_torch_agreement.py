"""Scellis's training losses against PyTorch's, step by step, from identical initial weights and
identical batches: the 784-256-10 Fashion-MNIST MLP with Adam, first 100 steps, CPU reference
against PyTorch's CPU build. PyTorch is an independent peer: it reads the data itself and
recomputes the batch order with its own implementation of the shuffle."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("SCELLIS_BUILD", os.path.join(ROOT, "build"))


def test_losses_match_pytorch_cpu_within_1e_5_relative():
    with tempfile.TemporaryDirectory() as tmp:
        init = os.path.join(tmp, "init.safetensors")
        ours = os.path.join(tmp, "losses.json")
        theirs = os.path.join(tmp, "torch.json")
        subprocess.run([os.path.join(BUILD, "scellis"), "train", os.path.join(ROOT, "examples/fashion_mlp.json"),
                        "--backend=cpu", "--epochs", "1", "--max-steps", "100", "--steps-per-run", "8",
                        "--init-out", init, "--losses-out", ours],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        subprocess.run([sys.executable, os.path.join(ROOT, "bench/peer/torch_mlp.py"), "--init", init,
                        "--steps", "100", "--batch", "64", "--seed", "1", "--lr", "1e-3", "--out", theirs],
                       check=True, stdout=subprocess.DEVNULL)
        a = json.load(open(ours))
        b = json.load(open(theirs))["losses"]
    assert len(a) == len(b) == 100
    worst = max(abs(x - y) / abs(y) for x, y in zip(a, b))
    print(f"max relative loss difference over 100 steps: {worst:.3e}")
    assert worst < 1e-5, (worst, a[:5], b[:5])
    # A loss that did not move would agree trivially: training must have made progress.
    assert b[-1] < 0.8 * b[0]
