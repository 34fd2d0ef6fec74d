"""Compares two `scellis run --json` results output by output within the default tolerance
(|a - b| <= 1e-5 + 1e-4 |b|); exits 1 naming the first disagreement."""
import json
import math
import sys

a, b = (json.load(open(p)) for p in sys.argv[1:3])
label = sys.argv[3] if len(sys.argv) > 3 else ""
assert a["outputs"].keys() == b["outputs"].keys(), "different outputs"
for name, out in a["outputs"].items():
    other = b["outputs"][name]
    assert out["shape"] == other["shape"], (label, name, "shape")
    for i, (x, y) in enumerate(zip(out["data"], other["data"])):
        if isinstance(x, str) or isinstance(y, str):
            assert x == y, (label, name, i, x, y)
        elif abs(x - y) > 1e-5 + 1e-4 * abs(x):
            sys.exit(f"{label}: output {name}[{i}] differs: {x} (cpu) vs {y} ({b['backend']})")
print(f"{label}: {b['backend']} agrees with {a['backend']} on {len(a['outputs'])} output(s)")
