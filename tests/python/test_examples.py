"""examples/python/ run as a user runs them (short), and say what they promise: the MLP's loss
falls and its test accuracy is far above chance; the compiled model agrees with eager."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(script, *args):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "python", script), *args],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_the_fashion_mlp_trains_from_python():
    if not os.path.isdir("/usr/share/datasets/fashion-mnist"):
        pytest.fail("Fashion-MNIST is not installed (tools/setup.sh installs dataset-fashion-mnist)")
    out = run("fashion_mlp.py", "--steps", "128", "--backend", "cpu")
    assert "backend cpu, executor reference" in out
    first, last = map(float, re.search(r"loss ([\d.]+) \(first 10\) -> ([\d.]+) \(last 10\)", out).groups())
    assert last < 0.7 * first, out
    accuracy = float(re.search(r"test accuracy ([\d.]+)", out).group(1))
    assert accuracy > 0.6, out  # chance is 0.1


def test_torch_compile_example_agrees_with_eager():
    out = run("torch_compile.py", "--backend", "cpu")
    errors = [float(v) for v in re.findall(r"max \|compiled - eager\| = ([\d.e+-]+)", out)]
    assert len(errors) == 2 and max(errors) < 1e-5, out
    assert "'subgraphs': 1" in out and "torch.cumsum" in out, out


def test_the_captured_step_example_trains_and_syncs():
    out = run("compile_step.py", "--steps", "128", "--backend", "cpu")
    first, last = map(float, re.search(r"loss ([\d.]+) \(first 10\) -> ([\d.]+) \(last 10\)", out).groups())
    assert last < 0.7 * first, out
    assert "optimizer.state step: 128" in out, out
    accuracy = float(re.search(r"test accuracy \(PyTorch, synced weights\) ([\d.]+)", out).group(1))
    assert accuracy > 0.6, out


def test_the_pipelines_example_rolls_up_and_matches_float64():
    out = run("pipelines.py", "--size", "24", "--iterations", "30", "--backend", "cpu")
    assert out.count("repeat 30,") == 3, out
    errors = [float(v) for v in re.findall(r"max \|scellis - float64\| = ([\d.e+-]+)", out)]
    assert len(errors) == 3 and max(errors) < 1e-5, out


def test_the_char_model_example_learns_the_text():
    out = run("char_model.py", "--steps", "256", "--backend", "cpu")
    assert "backend cpu, executor reference" in out
    first, last = map(float, re.search(r"loss ([\d.]+) \(first 10\) -> ([\d.]+) \(last 10\)", out).groups())
    assert first > 3.0 and last < 2.6, out  # ln 38 = 3.64 is a uniform guess over the vocabulary
