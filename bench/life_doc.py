#!/usr/bin/env python3
"""Writes a Game-of-Life graph document: an N x N grid (seeded random cells, about a third alive)
followed by K unrolled `life` steps, the last one the output `grid`.

usage: bench/life_doc.py N K SEED > life.json
"""
import json
import random
import sys


def main():
    n, k, seed = (int(a) for a in sys.argv[1:4])
    rng = random.Random(seed)
    cells = [1 if rng.random() < 1 / 3 else 0 for _ in range(n * n)]
    nodes = [{"id": 0, "op": "input", "name": "grid", "shape": [n, n], "data": cells}]
    nodes += [{"id": i, "op": "life", "a": i - 1} for i in range(1, k + 1)]
    json.dump({"version": 1, "nodes": nodes, "outputs": [{"name": "grid", "id": k}]}, sys.stdout,
              separators=(",", ":"))


if __name__ == "__main__":
    main()
