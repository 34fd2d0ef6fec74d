"""PyTorch DDP peer for the two-GPU benchmark: the 784-4096-4096-10 MLP (ReLU, cross-entropy,
Adam, lr 1e-3) trained data-parallel, one process per GPU, gradients all-reduced by NCCL.

Set up as Scellis's run is: fp32 with TF32 off, the global batch (8192) shared equally among the
GPUs (4096 each on two), each step's examples gathered on the host from the Fashion-MNIST train
split (or synthetic examples when the files are absent) and copied to the GPU. Prints one JSON
line (rank 0): gpus, global and per-GPU batch, steps timed, seconds, steps/s and samples/s.

usage: python3 ddp_peer.py --gpus 2 [--steps 50] [--warmup 5] [--global-batch 8192]
       python3 ddp_peer.py --gpus 2 --device cpu --hidden 32 --global-batch 64   (a check: gloo)
"""
import argparse
import gzip
import json
import os
import socket
import struct
import time

# NVLink multicast (NVLS) is off on the GPU host; these must be set before NCCL starts.
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402


def read_idx(path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    ndim = raw[3]
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_train(min_count):
    """The Fashion-MNIST train split scaled as Scellis scales it, or synthetic examples."""
    d = os.environ.get("SCELLIS_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
    images_path = f"{d}/train-images-idx3-ubyte.gz"
    if os.path.exists(images_path):
        images = read_idx(images_path).reshape(-1, 784).astype(np.float32) * np.float32(1 / 255)
        labels = read_idx(f"{d}/train-labels-idx1-ubyte.gz").astype(np.int64)
        return images, labels, "fashion-mnist"
    rng = np.random.default_rng(1)
    count = max(min_count, 60000)
    images = rng.random((count, 784), dtype=np.float32)
    labels = rng.integers(0, 10, count).astype(np.int64)
    return images, labels, "synthetic"


def model(hidden, layers):
    mods, width = [], 784
    for _ in range(layers):
        mods += [torch.nn.Linear(width, hidden), torch.nn.ReLU()]
        width = hidden
    mods.append(torch.nn.Linear(width, 10))
    return torch.nn.Sequential(*mods)


def worker(rank, args, port, out):
    world = args.gpus
    cuda = args.device == "cuda"
    if cuda:
        torch.cuda.set_device(rank)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    dist.init_process_group("nccl" if cuda else "gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=world)
    device = torch.device("cuda", rank) if cuda else torch.device("cpu")
    torch.manual_seed(1)  # the same initial replica on every rank (DDP also broadcasts rank 0's)
    net = model(args.hidden, args.layers).to(device)
    ddp = DDP(net, device_ids=[rank] if cuda else None)
    opt = torch.optim.Adam(ddp.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()

    per_gpu = args.global_batch // world
    images, labels, source = load_train(args.global_batch)
    rng = np.random.default_rng(2)
    order = rng.permutation(len(images))

    def step(k):
        # This rank's share of step k's global batch, gathered on the host and copied over.
        first = (k * args.global_batch) % (len(order) - args.global_batch + 1) + rank * per_gpu
        idx = order[first:first + per_gpu]
        x = torch.from_numpy(images[idx]).to(device, non_blocking=True)
        y = torch.from_numpy(labels[idx]).to(device, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(ddp(x), y)
        loss.backward()
        opt.step()
        return loss

    sync = torch.cuda.synchronize if cuda else (lambda: None)
    for k in range(args.warmup):
        step(k)
    sync()
    dist.barrier()
    start = time.perf_counter()
    for k in range(args.steps):
        loss = step(args.warmup + k)
    last = float(loss.item())
    sync()
    dist.barrier()
    seconds = time.perf_counter() - start
    if rank == 0:
        result = {
            "peer": "pytorch-ddp",
            "torch": torch.__version__,
            "backend": "nccl" if cuda else "gloo",
            "device": torch.cuda.get_device_name(0) if cuda else "cpu",
            "gpus": world,
            "model": f"784-{'-'.join([str(args.hidden)] * args.layers)}-10",
            "global_batch": args.global_batch,
            "batch_per_gpu": per_gpu,
            "data": source,
            "tf32": False,
            "steps": args.steps,
            "seconds": seconds,
            "steps_per_second": args.steps / seconds,
            "samples_per_second": args.steps * args.global_batch / seconds,
            "last_loss": last,
        }
        with open(out, "w") as f:
            json.dump(result, f)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--gpus", type=int, default=1, help="processes, one per GPU")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--global-batch", type=int, default=8192)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--layers", type=int, default=2, help="hidden layers")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    args = p.parse_args()
    if args.global_batch % args.gpus:
        p.error("--global-batch must divide evenly among the GPUs")
    if args.device == "cuda" and torch.cuda.device_count() < args.gpus:
        p.error(f"{args.gpus} GPUs asked for, {torch.cuda.device_count()} present")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = f"/tmp/ddp_peer_{os.getpid()}.json"
    mp.spawn(worker, args=(args, port, out), nprocs=args.gpus, join=True)
    with open(out) as f:
        print(f.read())
    os.remove(out)


if __name__ == "__main__":
    main()
