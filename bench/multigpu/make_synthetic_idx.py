"""Writes synthetic stand-ins for the four Fashion-MNIST IDX files (same names, shapes and
formats: 60000 train and 10000 test 28x28 uint8 images, labels 0..9), seeded, into a folder, for a
benchmark host without the dataset. Throughput does not depend on the pixel values; accuracy on
them means nothing.

usage: python3 make_synthetic_idx.py DIR
"""
import gzip
import os
import random
import struct
import sys


def write_idx(path, dims, payload):
    header = struct.pack(">BBBB", 0, 0, 0x08, len(dims)) + struct.pack(">" + "I" * len(dims), *dims)
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(header + payload)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = random.Random(1)
    for prefix, count in (("train", 60000), ("t10k", 10000)):
        write_idx(f"{out}/{prefix}-images-idx3-ubyte.gz", (count, 28, 28), rng.randbytes(count * 784))
        labels = bytes(rng.randrange(10) for _ in range(count))
        write_idx(f"{out}/{prefix}-labels-idx1-ubyte.gz", (count,), labels)
    print(f"synthetic Fashion-MNIST-shaped IDX files in {out}")


if __name__ == "__main__":
    main()
