"""Checkpoint and resume: training two epochs straight through and training one epoch, stopping,
and resuming from its checkpoint for the second give bit-identical parameters and optimizer
state on the CPU reference."""
import os
import subprocess
import tempfile

from safetensors_file import read_safetensors

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("SCELLIS_BUILD", os.path.join(ROOT, "build"))


def train(*args):
    subprocess.run([os.path.join(BUILD, "scellis"), "train", os.path.join(ROOT, "examples/fashion_mlp.json"),
                    "--backend=cpu", "--max-steps", "40", "--steps-per-run", "8", *args],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def tensors(path):
    # The checkpoint is safetensors: compare the tensor bytes, not the metadata.
    return read_safetensors(path)[1]


def test_resume_is_bit_exact():
    with tempfile.TemporaryDirectory() as tmp:
        straight = os.path.join(tmp, "straight.safetensors")
        first = os.path.join(tmp, "first.safetensors")
        resumed = os.path.join(tmp, "resumed.safetensors")
        train("--epochs", "2", "--checkpoint", straight)
        train("--epochs", "1", "--checkpoint", first)
        before = tensors(first)
        train("--epochs", "2", "--resume", first, "--checkpoint", resumed)
        a, b = tensors(straight), tensors(resumed)
    assert sorted(a) == sorted(b) and len(a) == 12  # 4 params, 8 Adam moments
    for name in a:
        assert a[name] == b[name], name
    # The second epoch really ran: the resumed state moved on from the first checkpoint.
    assert any(before[name] != b[name] for name in b)


def test_resume_refuses_a_foreign_or_damaged_checkpoint():
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = os.path.join(tmp, "first.safetensors")
        train("--epochs", "1", "--checkpoint", ckpt)
        # The same model with another learning rate is another document.
        other = os.path.join(tmp, "other.json")
        text = open(os.path.join(ROOT, "examples/fashion_mlp.json")).read()
        open(other, "w").write(text.replace('"lr": 0.001', '"lr": 0.002'))
        r = subprocess.run([os.path.join(BUILD, "scellis"), "train", other, "--backend=cpu",
                            "--max-steps", "8", "--epochs", "2", "--resume", ckpt],
                           capture_output=True, text=True)
        assert r.returncode == 2 and "checkpoint-mismatch" in r.stderr, r.stderr
        # A truncated file is refused by the safetensors reader, with nothing trained.
        damaged = os.path.join(tmp, "damaged.safetensors")
        open(damaged, "wb").write(open(ckpt, "rb").read()[:1000])
        r = subprocess.run([os.path.join(BUILD, "scellis"), "train",
                            os.path.join(ROOT, "examples/fashion_mlp.json"), "--backend=cpu",
                            "--max-steps", "8", "--epochs", "2", "--resume", damaged],
                           capture_output=True, text=True)
        assert r.returncode == 2 and "safetensors" in r.stderr, r.stderr
