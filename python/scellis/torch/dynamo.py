"""The TorchDynamo backend (``torch.compile(model, backend="scellis")``): partitions the FX
graph by what Scellis translates, runs each fused subgraph from a prepared session, reports the
graph breaks once and what the last compiled call ran on."""

import warnings

import numpy as np
import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupport

from .. import _scellis
from ..graph import Graph
from ..tensor import Tensor
from .targets import _DTYPE_NAMES, _name, _static_f32, _translator
from .translate import _Unsupported

_OPTION_KEYS = {"tier", "backend", "allow_software_adapter"}
# Prepared sessions by (graph content id, tier, backend, software adapter allowed).
_sessions = {}
_reported_breaks = set()
_announced_tier = False
_last = {}


class _Support(OperatorSupport):
    """Which nodes go to Scellis: a translated target on float32 values of static shape. A node
    that cannot is remembered, and reported once by name."""

    def __init__(self):
        super().__init__()
        self.breaks = {}

    def is_node_supported(self, submodules, node):
        if node.op not in ("call_function", "call_method"):
            return False
        if _translator(node) is None:
            self.breaks.setdefault(_name(node), "no Scellis op")
            return False
        value = node.meta.get("example_value", node.meta.get("val"))
        if not _static_f32(value):
            self.breaks.setdefault(_name(node), "not a float32 or bool CPU tensor of static shape")
            return False
        try:
            _trial(node)
        except _Unsupported as why:
            self.breaks.setdefault(_name(node), str(why))
            return False
        return True


def _example(node):
    return node.meta.get("example_value", node.meta.get("val"))


def _trial(node):
    """Translates one node on a scratch graph, so arguments it cannot take are found before the
    partition is made (and never at run time)."""
    g = Graph()
    values = {}

    def value(a):
        if isinstance(a, torch.fx.Node):
            if a not in values:
                ex = _example(a)
                if not _static_f32(ex):
                    raise _Unsupported("an operand that is not a float32 or bool tensor of "
                                       "static shape")
                values[a] = g.input(f"x{len(values)}", tuple(ex.shape), _DTYPE_NAMES[ex.dtype])
            return values[a]
        return a

    args = torch.fx.node.map_aggregate(node.args, value)
    kwargs = torch.fx.node.map_aggregate(node.kwargs, value)
    try:
        out = _translator(node)(g, args, kwargs)
    except _Unsupported:
        raise
    except Exception as e:  # arguments the Graph API refuses (a type, a dim): not for Scellis
        raise _Unsupported(f"{type(e).__name__}: {e}") from e
    want = tuple(_example(node).shape)
    if not isinstance(out, Tensor) or tuple(out.shape) != want:
        raise _Unsupported(f"its translation has shape {getattr(out, 'shape', None)}, PyTorch's {want}")
    if out.dtype != _DTYPE_NAMES[_example(node).dtype]:
        raise _Unsupported(f"its translation gives {out.dtype}, PyTorch {_example(node).dtype}")


class _ScellisSubgraph(torch.nn.Module):
    """One fused subgraph of the FX graph, run by a prepared Scellis session."""

    def __init__(self, gm, options):
        super().__init__()
        self.fallback = gm  # the same subgraph in PyTorch, for calls that need autograd
        self.options = options
        g = Graph(name="torch_compile")
        values, inputs, outputs = {}, [], []
        for node in gm.graph.nodes:
            if node.op == "placeholder":
                ex = _example(node)
                if ex is None:
                    raise _Unsupported("a placeholder without an example")
                values[node] = g.input(f"in{len(inputs)}", tuple(ex.shape),
                                       _DTYPE_NAMES.get(ex.dtype, "f32"))
                inputs.append(values[node])
            elif node.op in ("call_function", "call_method"):
                args = torch.fx.node.map_aggregate(node.args, lambda a: values.get(a, a))
                kwargs = torch.fx.node.map_aggregate(node.kwargs, lambda a: values.get(a, a))
                values[node] = _translator(node)(g, args, kwargs)
            elif node.op == "output":
                result = node.args[0]
                self.single = not isinstance(result, (tuple, list))
                outputs = [result] if self.single else list(result)
        self.out_names = [f"out{i}" for i in range(len(outputs))]
        # Fed by name: a session reused from an earlier graph of the same content knows them.
        self.input_names = [g.name_of(t) for t in inputs]
        named = {n: values[o] for n, o in zip(self.out_names, outputs)}
        # Dynamo hands the same graph over again (a second torch.compile of the model, a
        # recompilation after a guard failed): the session prepared for its content is reused.
        self.key = (_scellis.content_id(g.to_json(**named)), options["tier"], options["backend"],
                    options["allow_software_adapter"])
        self.cached = self.key in _sessions
        if not self.cached:
            _sessions[self.key] = g.prepare(
                feeds=inputs, backend=options["backend"], tier=options["tier"],
                allow_software_adapter=options["allow_software_adapter"], **named)
        self.session = _sessions[self.key]

    def forward(self, *args):
        if torch.is_grad_enabled() and any(a.requires_grad for a in args):
            _report_once("autograd", "inputs that need gradients under grad mode run in PyTorch "
                         "(torch.compile with backend='scellis' is for inference)")
            return self.fallback(*args)
        feeds = {n: a.detach().contiguous().numpy() for n, a in zip(self.input_names, args)}
        got = self.session.run(feeds)
        _last.update(backend=self.session.backend, executor=self.session.executor,
                     fallback_reason=self.session.fallback_reason)
        out = [torch.from_numpy(np.ascontiguousarray(got[n])) for n in self.out_names]
        return out[0] if self.single else tuple(out)


def _report_once(key, message):
    if key not in _reported_breaks:
        _reported_breaks.add(key)
        warnings.warn(f"scellis: {message}", stacklevel=3)


def _resolve(options):
    global _announced_tier
    options = dict(options or {})
    unknown = set(options) - _OPTION_KEYS
    if unknown:
        raise ValueError(f"scellis backend: unknown options {sorted(unknown)}; it takes "
                         f"{sorted(_OPTION_KEYS)}")
    if "tier" not in options and not _announced_tier:
        _announced_tier = True
        warnings.warn("scellis: torch.compile declares determinism tier 'prod' (pass "
                      "options={'tier': 'debug' | 'prod' | 'fast'} to choose)", stacklevel=3)
    return {"tier": options.get("tier", "prod"), "backend": options.get("backend", "auto"),
            "allow_software_adapter": bool(options.get("allow_software_adapter", False))}


def backend(gm, example_inputs, options=None, mode=None):
    """The TorchDynamo backend: returns gm with every subgraph Scellis can run replaced by a
    prepared Scellis session; the rest stays in PyTorch."""
    opts = _resolve(options)
    support = _Support()
    partitioner = CapabilityBasedPartitioner(gm, support, allows_single_node_partition=True)
    fused = partitioner.fuse_partitions(partitioner.propose_partitions())
    for name, breaks in sorted(support.breaks.items()):
        _report_once(name, f"{name} runs in PyTorch (a graph break): {breaks}")
    subgraphs = cached = 0
    for node in list(fused.graph.nodes):
        if node.op == "call_module" and node.target.startswith("fused_"):
            sub = _ScellisSubgraph(getattr(fused, node.target), opts)
            setattr(fused, node.target, sub)
            subgraphs += 1
            cached += sub.cached
    fused.recompile()
    _last.clear()
    _last.update(subgraphs=subgraphs, cached=cached, breaks=dict(support.breaks),
                 tier=opts["tier"])
    return fused.forward


def last_report():
    """What the last compiled call ran on: {subgraphs, cached (how many of them reused a session
    prepared for the same graph content), breaks, tier, backend, executor, fallback_reason}."""
    return dict(_last)
