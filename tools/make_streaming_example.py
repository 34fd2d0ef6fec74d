#!/usr/bin/env python3
"""Writes examples/streaming/row_scores.json: a dataset of 2048 rows (256 KiB of f32) scored row by
row under a 64 KiB budget, so `scellis plan` streams it in chunks. The data are quarters drawn from
a seeded generator (exact in f32), regenerated identically by this script."""
import json
import random
import sys

ROWS, FEATURES, HIDDEN, CLASSES = 2048, 32, 16, 4


def main(path):
    rng = random.Random(2026)
    data = [rng.randint(-16, 16) / 4 for _ in range(ROWS * FEATURES)]
    data = [int(v) if v == int(v) else v for v in data]

    def param(name, shape, seed):
        return {"id": name, "type": "param",
                "params": {"name": name, "shape": shape,
                           "init": {"kind": "uniform", "low": -0.25, "high": 0.25, "seed": seed}}}

    doc = {
        "format": "scellis.workflow/1",
        "name": "row_scores",
        "determinism": "prod",
        "tolerance": "default",
        "budget": {"memory_bytes": 65536},
        "dims": {"N": ROWS, "D": FEATURES, "H": HIDDEN, "K": CLASSES},
        "nodes": [
            {"id": "x", "type": "input",
             "params": {"name": "samples", "shape": ["N", "D"], "stream": True, "data": data}},
            param("w1", ["D", "H"], 11), param("b1", ["H"], 12), param("w2", ["H", "K"], 13),
            {"id": "h", "type": "matmul"},
            {"id": "hb", "type": "add"},
            {"id": "r", "type": "relu"},
            {"id": "logits", "type": "matmul"},
            {"id": "scores", "type": "softmax"},
            {"id": "feature_mean", "type": "mean", "params": {"axis": 0}},
        ],
        "wires": [
            {"from": "x", "to": "h.a"}, {"from": "w1", "to": "h.b"},
            {"from": "h", "to": "hb.a"}, {"from": "b1", "to": "hb.b"},
            {"from": "hb", "to": "r.a"}, {"from": "r", "to": "logits.a"},
            {"from": "w2", "to": "logits.b"}, {"from": "logits", "to": "scores.a"},
            {"from": "x", "to": "feature_mean.a"},
        ],
        "outputs": [{"name": "scores", "from": "scores"},
                    {"name": "feature_mean", "from": "feature_mean"}],
    }
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "examples/streaming/row_scores.json")
