#!/usr/bin/env python3
"""Start-up with a cold and a warm kernel cache: for each document, REPEATS rounds of
   cold  a run with an empty store (Dawn compiles every kernel and stores the results),
   warm  the same run again on that store (Dawn reads them back),
   off   the same run with SCELLIS_KERNEL_CACHE=off (compiles, stores nothing),
each a separate `scellis run DOC --json` process. From each run's stats: the device open time, the
time spent building pipelines (`pipeline_compile_ms`: every Device::Pipeline call that built one),
the run's own wall time, and the process's wall and CPU time. Prints one line per run and the medians.
After the last round it checks the warm store with `scellis store verify` and `store gc --dry-run`.

usage: startup.py [--scellis PATH] [--repeats N] [--flag=ARG ...] DOC...
   e.g. startup.py --scellis build/scellis --flag=--allow-software-adapter examples/pipelines/heat.json
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def run(scellis, doc, flags, env):
    start = time.monotonic()
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(
        [scellis, "run", doc, "--backend=webgpu", "--json", *flags],
        env=env, capture_output=True, text=True,
    )
    wall = time.monotonic() - start
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    # CPU seconds of the process: on a shared machine less noisy than its wall time.
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    text = p.stdout
    if p.returncode != 0 or "{" not in text:
        sys.exit(f"{doc}: scellis run failed ({p.returncode}):\n{p.stderr[-3000:]}{text[-2000:]}")
    out = json.loads(text[text.index("{") : text.rindex("}") + 1])
    s = out.get("stats", out)
    c = s.get("kernel_cache", {})
    return {
        "pipelines": s.get("pipelines_compiled", 0),
        "open_ms": s.get("device_open_ms", 0.0),
        "compile_ms": s.get("pipeline_compile_ms", 0.0),
        "run_ms": s.get("wall_ms", 0.0),
        "process_s": wall,
        "cpu_s": cpu,
        "hits": c.get("hits", 0),
        "misses": c.get("misses", 0),
        "stores": c.get("stores", 0),
        "refused": len(c.get("refused", [])),
        "cache": bool(c.get("enabled")),
    }


def line(doc, mode, r):
    cache = (
        f"hits {r['hits']} misses {r['misses']} stores {r['stores']} refused {r['refused']}"
        if r["cache"] else "cache off"
    )
    return (f"{os.path.basename(doc)} {mode}: pipelines {r['pipelines']} open {r['open_ms']:.0f} ms"
            f" compile {r['compile_ms']:.0f} ms run {r['run_ms']:.0f} ms process {r['process_s']:.2f} s cpu {r['cpu_s']:.2f} s"
            f" | {cache}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scellis", default="dist/scellis")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--flag", action="append", default=[], help="passed to scellis run")
    ap.add_argument("docs", nargs="+")
    a = ap.parse_args()
    base = dict(os.environ, SCELLIS_NO_RECORD="1")
    base.pop("SCELLIS_KERNEL_CACHE", None)
    summary = []
    for doc in a.docs:
        got = {"cold": [], "warm": [], "off": []}
        for _ in range(a.repeats):
            store = tempfile.mkdtemp(prefix="scellis-kernel-cache-")
            try:
                env = dict(base, SCELLIS_STORE=store)
                for mode in ("cold", "warm"):
                    got[mode].append(run(a.scellis, doc, a.flag, env))
                    print(line(doc, mode, got[mode][-1]), flush=True)
                off = dict(base, SCELLIS_STORE=store, SCELLIS_KERNEL_CACHE="off")
                got["off"].append(run(a.scellis, doc, a.flag, off))
                print(line(doc, "off", got["off"][-1]), flush=True)
                if _ == a.repeats - 1:
                    for cmd in (["store", "verify"], ["store", "gc", "--dry-run"]):
                        p = subprocess.run([a.scellis, *cmd], env=env, capture_output=True, text=True)
                        print(f"  {' '.join(cmd)} (exit {p.returncode}): "
                              f"{(p.stdout + p.stderr).strip().splitlines()[-1:]}", flush=True)
            finally:
                shutil.rmtree(store, ignore_errors=True)
        med = lambda mode, k: statistics.median(r[k] for r in got[mode])
        summary.append(
            f"{os.path.basename(doc)}: {got['cold'][0]['pipelines']} pipelines; median of "
            f"{a.repeats}: compile cold {med('cold', 'compile_ms'):.0f} / warm "
            f"{med('warm', 'compile_ms'):.0f} / off {med('off', 'compile_ms'):.0f} ms; open cold "
            f"{med('cold', 'open_ms'):.0f} / warm {med('warm', 'open_ms'):.0f} ms; process cold "
            f"{med('cold', 'process_s'):.2f} / warm {med('warm', 'process_s'):.2f} / off "
            f"{med('off', 'process_s'):.2f} s; process CPU cold {med('cold', 'cpu_s'):.2f} / warm "
            f"{med('warm', 'cpu_s'):.2f} / off {med('off', 'cpu_s'):.2f} s")
    print("\n".join(["", "medians:"] + summary))


if __name__ == "__main__":
    main()
