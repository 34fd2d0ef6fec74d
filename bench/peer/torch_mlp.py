"""PyTorch peer for the 784-256-10 Fashion-MNIST MLP (ReLU, cross-entropy, Adam).

Independent of Scellis: it reads the IDX files itself, recomputes the batch order with its own
implementation of the documented counter-based shuffle, and starts from initial weights that
Scellis exported as safetensors. Used by the agreement test (losses step by step) and by the
benchmarks (time per step: eager, CUDA graph, torch.compile).
"""
import argparse
import gzip
import json
import os
import struct
import time

import numpy as np
import torch

MASK = (1 << 64) - 1


def counter_hash(seed, counter):
    z = (seed * 0x9E3779B97F4A7C15 + counter + 0x632BE59BD9B4E019) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    z ^= z >> 31
    z = ((z + 0x9E3779B97F4A7C15) * 0xBF58476D1CE4E5B9) & MASK
    return z ^ (z >> 29)


def epoch_order(count, seed, epoch):
    order = list(range(count))
    stream = counter_hash(seed, epoch)
    for i in range(count - 1, 0, -1):
        j = (counter_hash(stream, i) * (i + 1)) >> 64
        order[i], order[j] = order[j], order[i]
    return order


def read_idx(path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    ndim = raw[3]
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_fashion(split):
    d = os.environ.get("SCELLIS_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
    prefix = "train" if split == "train" else "t10k"
    images = read_idx(f"{d}/{prefix}-images-idx3-ubyte.gz").reshape(-1, 784).astype(np.float32)
    # The same scaling as Scellis: multiply by the f32 value of 1/255.
    images = images * np.float32(1.0 / 255.0)
    labels = read_idx(f"{d}/{prefix}-labels-idx1-ubyte.gz").astype(np.int64)
    return images, labels


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        a, b = meta["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + a:8 + n + b], dtype=np.float32).reshape(meta["shape"]).copy()
    return out


def f32_product(a, b):
    return a @ b


def f16_product(a, b):
    """Scellis's mixed precision: operands rounded to f16, products and sums in f32, the result
    rounded to f16 and used as f32. Autograd rounds the gradients through the same casts."""
    return (a.half().float() @ b.half().float()).half().float()


def make_step(params, opt, product=f32_product, loss_scale=1.0):
    w1, b1, w2, b2 = params

    def step(x, y):
        opt.zero_grad(set_to_none=False)
        h = torch.relu(product(x, w1) + b1)
        logits = product(h, w2) + b2
        loss = torch.nn.functional.cross_entropy(logits, y)
        if loss_scale == 1.0:
            loss.backward()
        else:
            (loss * loss_scale).backward()
            for p in params:
                p.grad.mul_(1.0 / loss_scale)
        opt.step()
        return loss.detach()

    return step


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--init", required=True, help="initial state exported by scellis train --init-out")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--mode", default="losses", choices=["losses", "eager", "graph", "compile"])
    ap.add_argument("--out", help="write the result JSON here")
    ap.add_argument("--mixed-f16", action="store_true",
                    help="the products in f16 as Scellis's mixed precision computes them")
    ap.add_argument("--loss-scale", type=float, default=1.0, help="mixed precision's loss scale")
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (torch.set_num_threads); 0 keeps torch's default")
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device(args.device)
    init = read_safetensors(args.init)
    params = [torch.tensor(init[k], device=dev, requires_grad=True) for k in ("w1", "b1", "w2", "b2")]
    # foreach=False: the single-tensor Adam, whose formulas Scellis follows.
    opt = torch.optim.Adam(params, lr=args.lr, foreach=False, capturable=args.mode == "graph")
    images, labels = load_fashion("train")
    order = epoch_order(len(images), args.seed, 0)
    steps = args.steps
    # The first epoch's batches, on the device before timing; longer runs cycle through them.
    batches = min(steps, len(images) // args.batch)
    xs = torch.tensor(np.stack([images[order[i * args.batch:(i + 1) * args.batch]] for i in range(batches)]), device=dev)
    ys = torch.tensor(np.stack([labels[order[i * args.batch:(i + 1) * args.batch]] for i in range(batches)]), device=dev)
    step = make_step(params, opt, f16_product if args.mixed_f16 else f32_product, args.loss_scale)
    result = {"device": str(dev), "mode": args.mode, "torch": torch.__version__, "threads": torch.get_num_threads()}

    if args.mode == "losses":
        result["losses"] = [step(xs[i % batches], ys[i % batches]).item() for i in range(steps)]
    else:
        sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
        if args.mode == "compile":
            step = torch.compile(step)
        if args.mode == "graph":
            x_static, y_static = xs[0].clone(), ys[0].clone()
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    step(x_static, y_static)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                static_loss = step(x_static, y_static)

            def run(i):
                x_static.copy_(xs[i % batches])
                y_static.copy_(ys[i % batches])
                g.replay()
                return static_loss
        else:
            def run(i):
                return step(xs[i % batches], ys[i % batches])
        for i in range(10):  # warm-up (and compilation)
            run(i)
        sync()
        t0 = time.perf_counter()
        for i in range(steps):
            run(i)
        sync()
        result["us_per_step"] = (time.perf_counter() - t0) / steps * 1e6
    text = json.dumps(result)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
