"""Mixed precision from the command line: the plan accounts the f32 master weights apart, a
GPU without shader-f16 refuses the f16 products by name before anything runs, and the CPU
reference trains and checkpoints in f32. (Its numbers against PyTorch: tests/peer.)"""
import os
import subprocess
import tempfile

from safetensors_file import read_safetensors

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("SCELLIS_BUILD", os.path.join(ROOT, "build"))
MIXED = os.path.join(ROOT, "examples/fashion_mlp_mixed.json")


def scellis(*args, **kw):
    return subprocess.run([os.path.join(BUILD, "scellis"), *args], capture_output=True, text=True, **kw)


def test_the_plan_prints_the_master_weights_by_hand():
    out = scellis("plan", MIXED, check=True).stdout
    rows = {line.split()[0]: line.split()[1:3] for line in out.splitlines() if "KiB" in line or " B " in line}
    # w1 [784, 256] and w2 [256, 10] in f32: 813 056 bytes = 794.0 KiB; b1 [256] and b2 [10]
    # stay parameters: 1 064 bytes = 1.0 KiB.
    assert rows["master_weights"] == ["794.0", "KiB"], out
    assert rows["parameters"] == ["1.0", "KiB"], out
    assert "master_weights" not in scellis("plan", os.path.join(ROOT, "examples/fashion_mlp.json"), check=True).stdout


def test_a_gpu_without_shader_f16_refuses_by_name_and_writes_nothing():
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = os.path.join(tmp, "c.safetensors")
        env = dict(os.environ, SCELLIS_STORE=os.path.join(tmp, "store"))
        env.setdefault("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json")  # Debian's SwiftShader
        r = scellis("train", MIXED, "--backend=webgpu", "--allow-software-adapter", "--max-steps", "8",
                    "--checkpoint", checkpoint, env=env)
        assert r.returncode == 2, r.stderr
        assert "/nodes/7: error[shader-f16-unavailable]" in r.stderr, r.stderr
        assert "mixed_precision" in r.stderr  # the help names the section that made it f16
        assert not os.path.exists(checkpoint)


def test_the_cpu_reference_trains_and_checkpoints_f32_master_weights():
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = os.path.join(tmp, "c.safetensors")
        env = dict(os.environ, SCELLIS_STORE=os.path.join(tmp, "store"))
        r = scellis("train", MIXED, "--backend=cpu", "--max-steps", "16", "--steps-per-run", "8",
                    "--checkpoint", checkpoint, env=env)
        assert r.returncode == 0, r.stderr
        header, _ = read_safetensors(checkpoint)
    assert header["w1"]["dtype"] == "F32" and header["w1"]["shape"] == [784, 256]
    assert header["w2"]["dtype"] == "F32"
