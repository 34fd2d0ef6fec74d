"""examples/char_model's character-level model (index_select embedding, causal where mask,
dropout, cross-entropy, Adam), trained by the engine for 50 steps, against the same model in
PyTorch: the same initial weights (downloaded from the session), the same batches, and the same
dropout masks — rebuilt here in NumPy from the counter hash that docs/ops.md states, not read from
the engine — with torch.optim.Adam of the same settings. The loss of every step agrees within
1e-5 relative, on the CPU reference and on WebGPU (SwiftShader)."""
import json
import os

import numpy as np
import torch
import torch.nn.functional as F

import scellis

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(ROOT, "examples", "char_model")
STEPS = 50
_torch_runs = {}  # PyTorch's losses by initial weights


def load():
    with open(os.path.join(MODEL, "char_model.json")) as f:
        document = json.load(f)
    with open(os.path.join(MODEL, "lighthouse.txt")) as f:
        text = f.read()
    vocab = sorted(set(text))
    return document, np.array([vocab.index(c) for c in text], np.int32)


def pcg_hash(x):
    """The u32 PCG hash (Jarzynski and Olano 2020), as docs/ops.md states it for uniform."""
    x = x.astype(np.uint64)
    s = (x * 747796405 + 2891336453) & 0xFFFFFFFF
    w = (((s >> ((s >> 28) + 4)) ^ s) * 277803737) & 0xFFFFFFFF
    return ((w >> 22) ^ w) & 0xFFFFFFFF


def dropout_mask(shape, p, seed, step):
    """dropout's multiplier: 1 / (1 - p) in f32 where (bits >> 8) >= ceil(p * 2^24), else 0."""
    i = np.arange(int(np.prod(shape)), dtype=np.uint64)
    bits = pcg_hash(pcg_hash(i) ^ pcg_hash(np.uint64(seed) ^ pcg_hash(np.uint64(step))))
    keep = (bits >> 8) >= np.uint64(np.ceil(p * 2.0 ** 24))
    return torch.from_numpy(np.where(keep, np.float32(1 / (1 - p)), np.float32(0)).reshape(shape))


def node(document, id_):
    return next(n for n in document["nodes"] if n["id"] == id_)


def test_the_hash_matches_the_engines_uniform():
    """The NumPy hash is the engine's: uniform's values from a one-off graph, bit for bit."""
    document = {"format": "scellis.workflow/1", "name": "uniform", "determinism": "debug",
                "nodes": [{"id": "step", "type": "input", "params": {"name": "step", "shape": []}},
                          {"id": "u", "type": "uniform",
                           "params": {"shape": [1000], "seed": 12345}}],
                "wires": [{"from": "step", "to": "u.step"}],
                "outputs": [{"name": "u", "from": "u"}]}
    session = scellis.prepare_workflow(document, backend="cpu", watch=["u"])
    u = session.run({"step": np.float32(7)})["u"]
    session.dispose()
    i = np.arange(1000, dtype=np.uint64)
    bits = pcg_hash(pcg_hash(i) ^ pcg_hash(np.uint64(12345) ^ pcg_hash(np.uint64(7))))
    expected = (bits >> 8).astype(np.float32) / np.float32(2 ** 24)
    np.testing.assert_array_equal(u, expected)


def batches(ids, batch, context, steps):
    rng = np.random.default_rng(2026)
    for step in range(1, steps + 1):
        starts = rng.integers(0, len(ids) - context - 1, size=batch)
        windows = np.stack([ids[s:s + context + 1] for s in starts])
        yield step, windows[:, :-1].ravel(), windows[:, 1:].ravel()


def torch_losses(document, initial, data):
    """The losses of PyTorch's training steps (float32, CPU, eager)."""
    dims = document["dims"]
    B, T, E = dims["B"], dims["T"], dims["E"]
    w = {k: torch.tensor(v, requires_grad=True) for k, v in initial.items()}
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))  # position t sees positions <= t
    masked_out = node(document, "masked_out")["params"]["value"]
    scale = node(document, "scaled")["params"]["scalar"]
    drops = [node(document, n)["params"] for n in ("embed_drop", "attention_drop")]
    o = document["train"]["optimizer"]
    adam = torch.optim.Adam(w.values(), lr=o["lr"], betas=(o["beta1"], o["beta2"]), eps=o["eps"])
    losses = []
    for step, tokens, targets in data:
        embed = torch.index_select(w["wte"], 0, torch.from_numpy(tokens).long())
        h = (embed.reshape(B, T, E) + w["wpe"]) * dropout_mask((B, T, E), drops[0]["p"],
                                                                drops[0]["seed"], step)
        h = h.reshape(B * T, E)
        q, k, v = ((h @ w[n]).reshape(B, T, E) for n in ("wq", "wk", "wv"))
        scores = torch.where(causal, (q @ k.permute(0, 2, 1)) * scale, torch.tensor(masked_out))
        attention = torch.softmax(scores, -1) * dropout_mask((B, T, T), drops[1]["p"],
                                                              drops[1]["seed"], step)
        residual = h + (attention @ v).reshape(B * T, E) @ w["wo"]
        loss = F.cross_entropy(residual @ w["wout"] + w["bout"], torch.from_numpy(targets).long())
        adam.zero_grad()
        loss.backward()
        adam.step()
        losses.append(loss.item())
    return np.array(losses)


def test_char_model_trains_as_pytorch_does(backend):
    document, ids = load()
    dims = document["dims"]
    data = list(batches(ids, dims["B"], dims["T"], STEPS))
    session = scellis.prepare_workflow(document, **backend)
    params = [n["id"] for n in document["nodes"] if n["type"] == "param"]
    initial = {p: np.array(session.download(p)) for p in params}
    feeds = [{"tokens": tokens, "targets": targets.astype(np.float32), "step": np.float32(step)}
             for step, tokens, targets in data]
    ours = np.concatenate([session.run_steps(feeds[i:i + scellis.MAX_STEPS_PER_SUBMISSION])["loss"]
                           for i in range(0, STEPS, scellis.MAX_STEPS_PER_SUBMISSION)]).ravel()
    session.dispose()
    # Both backends start from the document's seeded initializers, so the reference runs once.
    key = json.dumps({k: v.tobytes().hex() for k, v in initial.items()})
    if key not in _torch_runs:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # tensors this small: a thread pool only adds waiting (100x)
        try:
            _torch_runs[key] = torch_losses(document, initial, data)
        finally:
            torch.set_num_threads(threads)
    theirs = _torch_runs[key]
    relative = np.abs(ours - theirs) / np.abs(theirs)
    print("worst relative difference", relative.max(), "at step", relative.argmax() + 1)
    assert theirs[-1] < theirs[0] - 0.5  # the model learns: the comparison is not of a flat line
    assert relative.max() <= 1e-5, (relative, ours, theirs)
