#!/usr/bin/env python3
"""Prints a `scellis run --json` result without its tensors: backend, executor, fallback and the
run's stats (submissions, maps, readback bytes, pipelines compiled, wall time)."""
import json
import sys

j = json.load(sys.stdin)
keep = {k: j.get(k) for k in ("backend", "executor", "fallback_reason", "determinism_tier")}
keep["outputs"] = {name: t["shape"] for name, t in j.get("outputs", {}).items()}
keep["stats"] = j.get("stats")
print(json.dumps(keep))
