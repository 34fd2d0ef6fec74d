#!/usr/bin/env python3
"""Checks that every file under src/ includes only headers of the libraries its own library may use.

The layering lives in one place, the `scellis_library(NAME DIR DEPS ...)` calls of CMakeLists.txt:
a library may include its own headers and those of the libraries its DEPS reach, transitively.
Tests (`*_test.cpp`, and the `*_test.h` helpers they share) link everything and are not checked. Nothing under src/ may include apps/.

usage: tools/check_layering.py [ROOT]    exit 0 when clean, 1 with one line per violation
"""
import os
import re
import sys

LIBRARY = re.compile(r"scellis_library\(\s*(scellis_\w+)\s+([^\s)]+)([^)]*)\)", re.S)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def read_layers(root):
    text = open(os.path.join(root, "CMakeLists.txt")).read()
    libs = {}
    for name, folder, rest in LIBRARY.findall(text):
        deps = []
        m = re.search(r"DEPS((?:\s+\w+)+)", rest)
        if m:
            deps = [d for d in m.group(1).split() if d.startswith("scellis_")]
        libs[name] = (folder.rstrip("/"), deps)
    return libs


def reach(libs, name, seen=None):
    seen = set() if seen is None else seen
    if name in seen:
        return seen
    seen.add(name)
    for dep in libs[name][1]:
        reach(libs, dep, seen)
    return seen


def owner(libs, path):
    """The library whose folder holds `path` (relative to the root), the longest match."""
    best = None
    for name, (folder, _) in libs.items():
        if path == folder or path.startswith(folder + "/"):
            if best is None or len(folder) > len(libs[best][0]):
                best = name
    return best


def check(root):
    libs = read_layers(root)
    problems = []
    for dirpath, _, files in os.walk(os.path.join(root, "src")):
        for f in sorted(files):
            if not f.endswith((".cpp", ".h")) or f.endswith(("_test.cpp", "_test.h", "_fuzz.cpp")):
                continue
            path = os.path.relpath(os.path.join(dirpath, f), root)
            mine = owner(libs, path)
            if mine is None:
                problems.append(f"{path}: no library owns this folder (add a scellis_library)")
                continue
            allowed = reach(libs, mine)
            text = open(os.path.join(root, path), errors="replace").read()
            for inc in INCLUDE.findall(text):
                if inc.startswith(("apps/", "cli/")):
                    problems.append(f"{path}: includes \"{inc}\" from apps/; the engine never includes a front end")
                    continue
                target = owner(libs, "src/" + inc)
                if target is not None and target not in allowed:
                    problems.append(
                        f"{path}: includes \"{inc}\" of {target}, which {mine} does not depend on "
                        f"(it may use: {', '.join(sorted(allowed))})")
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f"layering: {len(problems)} include(s) cross the layering in CMakeLists.txt")
        return 1
    print(f"layering: clean ({len(read_layers(root))} libraries)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
