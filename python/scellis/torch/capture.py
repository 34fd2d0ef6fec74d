"""Training-step capture for compile_step: the model traced by torch.fx into a Scellis
workflow (its nodes, wires and dropout masks), and the error naming what cannot be captured."""

import operator

import torch
import torch.nn.functional as F
from torch.fx.passes.shape_prop import ShapeProp


class CaptureError(ValueError):
    """What compile_step cannot capture, named (an optimizer option, a module, a second capture)."""


_ACTIVATIONS = {torch.nn.ReLU: "relu", torch.nn.Tanh: "tanh", torch.nn.Sigmoid: "sigmoid"}
_FUNCTION_ACTIVATIONS = {torch.relu: "relu", F.relu: "relu", torch.tanh: "tanh", F.tanh: "tanh",
                         torch.sigmoid: "sigmoid", F.sigmoid: "sigmoid"}


class _Workflow:
    """The captured step as a Scellis workflow document: nodes, wires, outputs and a train
    section (the engine differentiates the forward itself and appends the optimizer)."""

    def __init__(self):
        self.nodes, self.wires = [], []

    def node(self, type_, params=None, **inputs):
        nid = f"n{len(self.nodes)}"
        self.nodes.append({"id": nid, "type": type_, "params": params or {}})
        for port, src in inputs.items():
            self.wires.append({"from": src, "to": f"{nid}.{port}"})
        return nid


class _Dropout:
    """A dropout of the captured forward: its mask is drawn by PyTorch on every step, in the
    order and with the calls eager dropout makes on the CPU (``empty_like(x).bernoulli_(1 - p)``
    scaled by ``1 / (1 - p)``), and fed to the step — so the random stream is consumed as eager
    steps would consume it, and the masks are the ones eager would have used."""

    def __init__(self, name, shape, p):
        self.name, self.shape, self.p = name, shape, p

    def draw(self):
        keep = 1.0 - self.p
        return torch.empty(self.shape).bernoulli_(keep).div_(keep).numpy()


def _dropout_args(node):
    p = node.kwargs.get("p", node.args[1] if len(node.args) > 1 else 0.5)
    training = node.kwargs.get("training", node.args[2] if len(node.args) > 2 else True)
    if node.kwargs.get("inplace", node.args[3] if len(node.args) > 3 else False):
        raise CaptureError("an in-place dropout is not captured")
    if not isinstance(p, float) or not isinstance(training, bool):
        raise CaptureError("dropout with a p or training flag computed in the forward")
    return p, training


def _capture(model, example):
    """Traces the model (torch.fx) into a workflow: returns (workflow, output node, param map,
    dropouts). Shapes come from running the traced forward once on ``example`` with the random
    state saved and restored, so the capture consumes none of the stream."""
    gm = torch.fx.symbolic_trace(model)
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        ShapeProp(gm).propagate(example)
    modules = dict(gm.named_modules())
    wf = _Workflow()
    values, params = {}, {}  # fx node -> workflow node; parameter name -> (workflow name, tensor)
    dropouts = []

    def dropout(node, x, p, training):
        if not training or p == 0.0:
            return x
        if p >= 1.0:
            raise CaptureError("dropout with p=1 (every element dropped) is not captured")
        name = f"dropout{len(dropouts)}"
        dropouts.append(_Dropout(name, tuple(node.meta["tensor_meta"].shape), p))
        mask = wf.node("input", {"name": name, "shape": list(dropouts[-1].shape)})
        return wf.node("mul", a=x, b=mask)

    def param(qualified):
        if qualified not in params:
            tensor = gm.get_parameter(qualified)
            name = qualified.replace(".", "_")
            nid = wf.node("param", {"name": name, "shape": list(tensor.shape),
                                    "init": {"kind": "zeros"}})
            params[qualified] = (name, tensor, nid)
        return params[qualified][2]

    for node in gm.graph.nodes:
        if node.op == "placeholder":
            if values:
                raise CaptureError("the model takes one input")
            values[node] = wf.node("input", {"name": "x", "shape": list(example.shape)})
        elif node.op == "get_attr":
            values[node] = param(node.target)
        elif node.op == "call_module":
            mod = modules[node.target]
            x = values[node.args[0]]
            if isinstance(mod, torch.nn.Linear):
                wt = wf.node("transpose", a=param(f"{node.target}.weight"))
                y = wf.node("matmul", a=x, b=wt)
                values[node] = wf.node("add", a=y, b=param(f"{node.target}.bias")) if mod.bias is not None else y
            elif type(mod) in _ACTIVATIONS:
                values[node] = wf.node(_ACTIVATIONS[type(mod)], a=x)
            elif isinstance(mod, torch.nn.GELU) and mod.approximate == "none":
                values[node] = wf.node("gelu", a=x)
            elif type(mod) is torch.nn.Dropout:
                if mod.inplace:
                    raise CaptureError(f"the in-place dropout {node.target} is not captured")
                values[node] = dropout(node, x, float(mod.p), mod.training)
            else:
                raise CaptureError(f"the module {node.target} ({type(mod).__name__}) is not captured")
        elif node.op == "call_function" and node.target is F.dropout:
            values[node] = dropout(node, values[node.args[0]], *_dropout_args(node))
        elif node.op == "call_function" and node.target in _FUNCTION_ACTIVATIONS:
            values[node] = wf.node(_FUNCTION_ACTIVATIONS[node.target], a=values[node.args[0]])
        elif node.op == "call_function" and node.target in (operator.add, torch.add) and \
                all(isinstance(a, torch.fx.Node) for a in node.args[:2]):
            values[node] = wf.node("add", a=values[node.args[0]], b=values[node.args[1]])
        elif node.op == "output":
            result = values[node.args[0]]
        else:
            raise CaptureError(f"{node.op} {node.target} is not captured")
    return wf, result, params, dropouts
