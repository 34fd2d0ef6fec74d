"""The layering check passes on the tree and refuses a rung that includes a higher one."""
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
CHECK = os.path.join(ROOT, "tools", "check_layering.py")


def run(root):
    return subprocess.run([sys.executable, CHECK, root], capture_output=True, text=True)


def test_tree_is_layered():
    r = run(ROOT)
    assert r.returncode == 0, r.stdout


def test_lower_rung_including_higher_one_fails():
    r = run(os.path.join(os.path.dirname(__file__), "fixture_bad"))
    assert r.returncode == 1
    assert 'src/kernel/module.h: includes "execplan/plan.h" of scellis_execplan' in r.stdout
    # The legal direction is not reported.
    assert "src/execplan/plan.h" not in r.stdout
