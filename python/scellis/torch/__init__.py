"""``torch.compile(model, backend="scellis")``: PyTorch inference through the Scellis engine.

The backend is registered as a TorchDynamo backend by the package's entry point, so installing
the package is enough. Dynamo hands over an FX graph; the nodes Scellis has an op for are grouped
into subgraphs (PyTorch's own capability partitioner), each translated op by op into a
``scellis.Graph`` and prepared once as a session; every other node stays in PyTorch — a graph
break, reported once by the op's name, never a wrong answer. A subgraph whose inputs need
gradients while grad mode is on runs in PyTorch too (this backend is for inference; the answer
would otherwise lose its autograd history).

The engine never assumes a determinism tier: the backend declares ``prod`` unless the caller
passes ``options={"tier": "debug" | "prod" | "fast"}`` and says so once. ``options`` also takes
``backend`` ("auto", "webgpu", "cpu") and ``allow_software_adapter``.

    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    fast = torch.compile(model, backend="scellis", options={"tier": "prod"})
    with torch.no_grad():
        logits = fast(x)
    scellis.torch.last_report()   # backend, executor, fallback reason, breaks

``compile_step(model, loss_fn, optimizer)`` captures a training step instead (see its docstring).

The modules: ``translate`` and ``translate_shape`` (one FX node into Scellis ops) and ``targets``
(which FX targets have a translation), ``dynamo`` (the backend), ``capture`` and ``step``
(compile_step).
"""

# _reported_breaks: the breaks already warned about (cleared, a break is warned about again).
from .dynamo import _reported_breaks, backend, last_report
from .step import CaptureError, CompiledStep, compile_step

__all__ = ["backend", "last_report", "compile_step", "CompiledStep", "CaptureError"]
