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


def test_mixed_precision_losses_match_pytorch_with_f16_products():
    """The same MLP with the train section's "mixed_precision" (f16 products, f32 master weights,
    loss scale 1024) against PyTorch computing each product from f16-rounded operands and
    rounding it to f16, with the same loss scaling; and against the f32 run, which it must not
    equal (the f16 products must have been used)."""
    with tempfile.TemporaryDirectory() as tmp:
        init = os.path.join(tmp, "init.safetensors")
        runs = {}
        for name in ("fashion_mlp_mixed", "fashion_mlp"):
            runs[name] = os.path.join(tmp, name + ".json")
            subprocess.run([os.path.join(BUILD, "scellis"), "train", os.path.join(ROOT, "examples", name + ".json"),
                            "--backend=cpu", "--epochs", "1", "--max-steps", "100", "--steps-per-run", "8",
                            "--init-out", init, "--losses-out", runs[name]],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        theirs = os.path.join(tmp, "torch.json")
        subprocess.run([sys.executable, os.path.join(ROOT, "bench/peer/torch_mlp.py"), "--init", init,
                        "--steps", "100", "--batch", "64", "--seed", "1", "--lr", "1e-3",
                        "--mixed-f16", "--loss-scale", "1024", "--out", theirs],
                       check=True, stdout=subprocess.DEVNULL)
        mixed = json.load(open(runs["fashion_mlp_mixed"]))
        f32 = json.load(open(runs["fashion_mlp"]))
        b = json.load(open(theirs))["losses"]
    assert len(mixed) == len(b) == len(f32) == 100

    def worst(xs, ys):
        return max(abs(x - y) / abs(y) for x, y in zip(xs, ys))

    # Adam magnifies a rounding flip of an f16 product in a near-zero gradient into a full step, so
    # two correct mixed-precision runs drift apart slowly: the first steps are held tight (3.7e-6
    # measured), the whole run loosely (5.2e-3 measured).
    early, apart = worst(mixed[:4], b[:4]), worst(mixed[:4], f32[:4])
    print(f"mixed precision, first 4 steps: {early:.3e} from PyTorch, {apart:.3e} from f32; "
          f"100 steps: {worst(mixed, b):.3e} from PyTorch")
    assert early < 2e-5, (early, mixed[:4], b[:4])
    assert apart > 10 * early, (apart, early)
    assert worst(mixed, b) < 1e-2
    assert b[-1] < 0.8 * b[0]
