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
"""

import json
import operator
import warnings

import numpy as np
import torch
import torch.nn.functional as F
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupport
from torch.fx.passes.shape_prop import ShapeProp

from . import _scellis
from .graph import Graph
from .tensor import Tensor

_OPTION_KEYS = {"tier", "backend", "allow_software_adapter"}
# Prepared sessions by (graph content id, tier, backend, software adapter allowed).
_sessions = {}
_reported_breaks = set()
_announced_tier = False
_last = {}


class _Unsupported(Exception):
    """A node this backend does not translate (with the reason)."""


def _dim(kwargs, args, position, name, default=None):
    if name in kwargs:
        return kwargs[name]
    return args[position] if len(args) > position else default


def _only(kwargs, allowed):
    extra = {k: v for k, v in kwargs.items() if k not in allowed and v is not None}
    if extra:
        raise _Unsupported(f"arguments {sorted(extra)}")


def _binary(op):
    def translate(g, args, kwargs):
        _only(kwargs, {"alpha"})
        a, b = args[0], args[1]
        if kwargs.get("alpha", 1) != 1:
            b = b * kwargs["alpha"]
        if not isinstance(a, Tensor) and not isinstance(b, Tensor):
            raise _Unsupported("no tensor operand")
        return getattr(operator, op)(a, b)
    return translate


def _unary(method):
    def translate(g, args, kwargs):
        _only(kwargs, {"inplace"})
        return getattr(args[0], method)()
    return translate


def _gelu(g, args, kwargs):
    if kwargs.get("approximate", "none") != "none":
        raise _Unsupported("approximate='tanh' (Scellis has the exact erf form)")
    return args[0].gelu()


def _softmax(method):
    def translate(g, args, kwargs):
        _only(kwargs, {"dim", "_stacklevel", "dtype"})
        if kwargs.get("dtype") not in (None, torch.float32):
            raise _Unsupported("a dtype argument")
        dim = _dim(kwargs, args, 1, "dim")
        if dim is None:
            raise _Unsupported("softmax without dim")
        return getattr(args[0], method)(dim)
    return translate


def _reduce(method):
    def translate(g, args, kwargs):
        _only(kwargs, {"dim", "keepdim", "axis"})
        x = args[0]
        dim = kwargs.get("dim", kwargs.get("axis", args[1] if len(args) > 1 else None))
        keepdim = kwargs.get("keepdim", args[2] if len(args) > 2 else False)
        if isinstance(dim, (tuple, list)):
            if len(dim) != 1:
                raise _Unsupported("a reduction over several dims")
            dim = dim[0]
        return getattr(x, method)(axis=dim, keepdim=keepdim)
    return translate


def _linear(g, args, kwargs):
    x, w = args[0], args[1]
    b = kwargs.get("bias", args[2] if len(args) > 2 else None)
    y = x @ w.transpose()
    return y + b if b is not None else y


def _addmm(g, args, kwargs):
    _only(kwargs, set())
    bias, a, b = args
    return bias + a @ b


def _reshape(g, args, kwargs):
    shape = args[1:] if len(args) > 2 else args[1]
    shape = list(shape) if isinstance(shape, (tuple, list, torch.Size)) else [shape]
    return args[0].reshape(*shape)


def _permute(g, args, kwargs):
    dims = args[1:] if len(args) > 2 else args[1]
    return args[0].permute(*dims)


def _transpose(g, args, kwargs):
    x = args[0]
    return x.transpose(args[1], args[2]) if len(args) > 2 else x.transpose()


def _t(g, args, kwargs):
    return args[0].transpose()


def _getattr(g, args, kwargs):
    """x.T (a 2-D transpose) and x.mT (the last two dims) as FX records them."""
    if args[1] == "T" and isinstance(args[0], Tensor) and args[0].ndim == 2:
        return args[0].transpose()
    if args[1] == "mT" and isinstance(args[0], Tensor):
        return args[0].transpose(-2, -1)
    raise _Unsupported(f"the attribute {args[1]!r}")


def _max_min(method):
    def translate(g, args, kwargs):
        _only(kwargs, set())
        a, b = args
        if not isinstance(a, Tensor):
            raise _Unsupported("a scalar first operand")
        return getattr(a, method)(b)
    return translate


def _compare(op, reflected):
    def translate(g, args, kwargs):
        _only(kwargs, set())
        a, b = args[0], args[1]
        if isinstance(a, Tensor):
            return getattr(a, op)(b)
        if isinstance(b, Tensor):  # 0 < x is x > 0
            return getattr(b, reflected)(a)
        raise _Unsupported("no tensor operand")
    return translate


def _where(g, args, kwargs):
    _only(kwargs, set())
    if len(args) != 3:
        raise _Unsupported("torch.where(condition) (the indices form)")
    cond, a, b = args
    if not isinstance(cond, Tensor):
        raise _Unsupported("a condition that is not a tensor")
    return g.where(cond, a, b)


def _tensor_where(g, args, kwargs):
    _only(kwargs, set())
    return g.where(args[1], args[0], args[2])


def _masked_fill(g, args, kwargs):
    _only(kwargs, set())
    a, mask, value = args
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise _Unsupported("a fill value that is not a number")
    return a.masked_fill(mask, value)


def _clamp(low_name, high_name, defaults=(None, None), fixed=None):
    def translate(g, args, kwargs):
        if fixed is not None:
            low, high = fixed
        else:
            low = kwargs.get(low_name, args[1] if len(args) > 1 else defaults[0])
            high = kwargs.get(high_name, args[2] if len(args) > 2 else defaults[1])
        _only({k: v for k, v in kwargs.items() if k not in (low_name, high_name)}, {"inplace"})
        if kwargs.get("inplace"):
            raise _Unsupported("inplace=True")
        for bound in (low, high):
            if bound is not None and (not isinstance(bound, (int, float)) or isinstance(bound, bool)):
                raise _Unsupported("a bound that is not a number")
        return args[0].clamp(low, high)
    return translate


def _clamp_one(side):
    def translate(g, args, kwargs):
        _only(kwargs, set())
        bound = args[1]
        if not isinstance(bound, (int, float)) or isinstance(bound, bool):
            raise _Unsupported("a bound that is not a number")
        return args[0].clamp(**{side: bound})
    return translate


_CASTS = {torch.float32: "f32", torch.bool: "bool"}


def _cast_to(dtype_name):
    def translate(g, args, kwargs):
        _only(kwargs, set())
        return args[0].cast(dtype_name)
    return translate


def _to(g, args, kwargs):
    _only(kwargs, {"dtype"})
    dtype = kwargs.get("dtype", args[1] if len(args) > 1 else None)
    if dtype not in _CASTS or len(args) > 2:
        raise _Unsupported(f"to({dtype!r}) (Scellis converts between float32 and bool)")
    return args[0].cast(_CASTS[dtype])


def _dropout(g, args, kwargs):
    """Inference: dropout is the identity when not training; a training dropout's draws belong
    to PyTorch's random stream, so it stays in PyTorch."""
    training = kwargs.get("training", args[2] if len(args) > 2 else True)
    if training:
        raise _Unsupported("dropout in training mode (its random draws are PyTorch's)")
    return args[0]


def _identity(g, args, kwargs):
    return args[0]


def _getitem(g, args, kwargs):
    x, key = args
    if not isinstance(x, Tensor):
        raise _Unsupported("indexing something that is not a tensor")
    parts = key if isinstance(key, tuple) else (key,)
    for k in parts:
        if not (k is Ellipsis or isinstance(k, slice) or
                (isinstance(k, int) and not isinstance(k, bool))):
            raise _Unsupported(f"an index {type(k).__name__} (Scellis slices with integers, "
                               "slices and Ellipsis)")
        if isinstance(k, slice) and not all(v is None or isinstance(v, int)
                                            for v in (k.start, k.stop, k.step)):
            raise _Unsupported("a slice bound that is not an integer")
    return x[key]


def _flip(g, args, kwargs):
    dims = kwargs.get("dims", args[1] if len(args) > 1 else None)
    dims = args[1:] if len(args) > 2 else dims
    return args[0].flip(*([dims] if isinstance(dims, int) else dims))


def _narrow(g, args, kwargs):
    x, dim, start, length = args
    if not all(isinstance(v, int) for v in (dim, start, length)):
        raise _Unsupported("a narrow with bounds computed in the forward")
    key = [slice(None)] * x.ndim
    key[dim] = slice(start, start + length)
    return x[tuple(key)]


def _select(g, args, kwargs):
    x, dim, index = args
    key = [slice(None)] * x.ndim
    key[dim] = index
    return x[tuple(key)]


def _pad(g, args, kwargs):
    x = args[0]
    pad = kwargs.get("pad", args[1] if len(args) > 1 else None)
    mode = kwargs.get("mode", args[2] if len(args) > 2 else "constant")
    value = kwargs.get("value", args[3] if len(args) > 3 else None)
    if mode != "constant":
        raise _Unsupported(f"mode={mode!r} (Scellis pads with a constant)")
    if len(pad) % 2 or len(pad) // 2 > x.ndim or any(p < 0 for p in pad):
        raise _Unsupported("negative or malformed padding (a crop is a slice)")
    # PyTorch lists (before, after) from the last axis backwards.
    pairs = [[0, 0] for _ in range(x.ndim)]
    for i in range(len(pad) // 2):
        pairs[x.ndim - 1 - i] = [pad[2 * i], pad[2 * i + 1]]
    return x.pad(pairs, 0.0 if value is None else value)


def _join(method):
    """torch.cat / torch.stack: a list of tensors of one dtype (PyTorch promotes mixed dtypes,
    Scellis joins one dtype, so a mixed list stays in PyTorch)."""
    def translate(g, args, kwargs):
        _only(kwargs, {"tensors", "dim", "axis"})
        tensors = kwargs.get("tensors", args[0] if args else None)
        dim = kwargs.get("dim", kwargs.get("axis", args[1] if len(args) > 1 else 0))
        if not isinstance(tensors, (list, tuple)) or not tensors or not all(
                isinstance(t, Tensor) for t in tensors):
            raise _Unsupported("a list that is not of tensors")
        if len({t.dtype for t in tensors}) > 1:
            raise _Unsupported("tensors of mixed dtypes (PyTorch promotes them)")
        if not isinstance(dim, int):
            raise _Unsupported("a dim that is not an integer")
        return getattr(g, method)(tensors, dim)
    return translate


# The FX targets this backend translates: torch-level functions and operators, and tensor methods.
_FUNCTIONS = {
    operator.add: _binary("add"), torch.add: _binary("add"),
    operator.sub: _binary("sub"), torch.sub: _binary("sub"),
    operator.mul: _binary("mul"), torch.mul: _binary("mul"),
    operator.truediv: _binary("truediv"), torch.div: _binary("truediv"),
    operator.matmul: lambda g, a, k: a[0] @ a[1], torch.matmul: lambda g, a, k: a[0] @ a[1],
    operator.neg: _unary("neg"), torch.neg: _unary("neg"),
    torch.relu: _unary("relu"), F.relu: _unary("relu"),
    torch.sigmoid: _unary("sigmoid"), F.sigmoid: _unary("sigmoid"),
    torch.tanh: _unary("tanh"), F.tanh: _unary("tanh"),
    torch.exp: _unary("exp"), torch.log: _unary("log"), torch.sqrt: _unary("sqrt"),
    F.gelu: _gelu,
    torch.softmax: _softmax("softmax"), F.softmax: _softmax("softmax"),
    torch.log_softmax: _softmax("log_softmax"), F.log_softmax: _softmax("log_softmax"),
    torch.sum: _reduce("sum"), torch.mean: _reduce("mean"),
    F.linear: _linear, torch._C._nn.linear: _linear, torch.addmm: _addmm,
    torch.reshape: _reshape, torch.permute: _permute, torch.transpose: _transpose, torch.t: _t,
    torch.maximum: _max_min("maximum"), torch.minimum: _max_min("minimum"),
    getattr: _getattr,
    operator.eq: _compare("eq", "eq"), torch.eq: _compare("eq", "eq"),
    operator.ne: _compare("ne", "ne"), torch.ne: _compare("ne", "ne"),
    operator.lt: _compare("lt", "gt"), torch.lt: _compare("lt", "gt"),
    operator.le: _compare("le", "ge"), torch.le: _compare("le", "ge"),
    operator.gt: _compare("gt", "lt"), torch.gt: _compare("gt", "lt"),
    operator.ge: _compare("ge", "le"), torch.ge: _compare("ge", "le"),
    torch.where: _where, torch.masked_fill: _masked_fill,
    torch.clamp: _clamp("min", "max"), torch.clip: _clamp("min", "max"),
    torch.clamp_min: _clamp_one("min"), torch.clamp_max: _clamp_one("max"),
    F.hardtanh: _clamp("min_val", "max_val", defaults=(-1.0, 1.0)), F.relu6: _clamp("", "", fixed=(0.0, 6.0)),
    F.dropout: _dropout, torch.nn.functional.dropout: _dropout,
    operator.getitem: _getitem, torch.flip: _flip, torch.narrow: _narrow, torch.select: _select,
    F.pad: _pad, torch._C._nn.pad: _pad,
    torch.cat: _join("concat"), torch.concat: _join("concat"), torch.concatenate: _join("concat"),
    torch.stack: _join("stack"),
}
_METHODS = {
    "add": _binary("add"), "sub": _binary("sub"), "mul": _binary("mul"), "div": _binary("truediv"),
    "neg": _unary("neg"), "relu": _unary("relu"), "sigmoid": _unary("sigmoid"),
    "tanh": _unary("tanh"), "exp": _unary("exp"), "log": _unary("log"), "sqrt": _unary("sqrt"),
    "softmax": _softmax("softmax"), "log_softmax": _softmax("log_softmax"),
    "sum": _reduce("sum"), "mean": _reduce("mean"), "matmul": lambda g, a, k: a[0] @ a[1],
    "view": _reshape, "reshape": _reshape, "permute": _permute, "transpose": _transpose, "t": _t,
    "maximum": _max_min("maximum"), "minimum": _max_min("minimum"),
    "eq": _compare("eq", "eq"), "ne": _compare("ne", "ne"), "lt": _compare("lt", "gt"),
    "le": _compare("le", "ge"), "gt": _compare("gt", "lt"), "ge": _compare("ge", "le"),
    "where": _tensor_where, "masked_fill": _masked_fill,
    "clamp": _clamp("min", "max"), "clip": _clamp("min", "max"),
    "clamp_min": _clamp_one("min"), "clamp_max": _clamp_one("max"),
    "float": _cast_to("f32"), "bool": _cast_to("bool"), "to": _to,
    "contiguous": _identity,
    "flip": _flip, "narrow": _narrow, "select": _select,
}


def _translator(node):
    if node.op == "call_function":
        return _FUNCTIONS.get(node.target)
    if node.op == "call_method":
        return _METHODS.get(node.target)
    return None


def _name(node):
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    t = node.target
    return getattr(t, "__module__", "") + "." + getattr(t, "__name__", str(t))


_DTYPE_NAMES = {torch.float32: "f32", torch.bool: "bool"}


def _static_f32(value):
    """A float32 or bool CPU tensor of static shape (what a Scellis graph takes), from a node's
    example."""
    return (isinstance(value, torch.Tensor) and value.dtype in _DTYPE_NAMES
            and all(isinstance(s, int) for s in value.shape) and value.device.type == "cpu")


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


# ---- training-step capture ----------------------------------------------------------------

class CaptureError(ValueError):
    """What compile_step cannot capture, named (an optimizer option, a module, a second capture)."""


_live_steps = {}  # id(optimizer) -> the prepared CompiledStep holding it

_ACTIVATIONS = {torch.nn.ReLU: "relu", torch.nn.Tanh: "tanh", torch.nn.Sigmoid: "sigmoid"}
_FUNCTION_ACTIVATIONS = {torch.relu: "relu", F.relu: "relu", torch.tanh: "tanh", F.tanh: "tanh",
                         torch.sigmoid: "sigmoid", F.sigmoid: "sigmoid"}


def _group_settings(optimizer, group):
    """One parameter group's settings in the train section's spelling."""
    lr = float(group["lr"])
    if type(optimizer) is torch.optim.SGD:
        return {"kind": "sgd", "lr": lr, "momentum": float(group["momentum"]),
                "dampening": float(group["dampening"]), "nesterov": bool(group["nesterov"]),
                "weight_decay": float(group["weight_decay"]),
                "maximize": bool(group.get("maximize", False))}
    if type(optimizer) in (torch.optim.Adam, torch.optim.AdamW):
        if group.get("amsgrad"):
            raise CaptureError("amsgrad=True is not captured (Scellis has no max-of-moments update)")
        beta1, beta2 = group["betas"]
        kind = "adamw" if type(optimizer) is torch.optim.AdamW else "adam"
        return {"kind": kind, "lr": lr, "beta1": float(beta1), "beta2": float(beta2),
                "eps": float(group["eps"]), "weight_decay": float(group["weight_decay"]),
                "maximize": bool(group.get("maximize", False))}
    raise CaptureError(f"{type(optimizer).__name__} is not captured; SGD, Adam and AdamW are")


def _optimizer_spec(optimizer, params, node_of):
    """The train section's optimizer: the first parameter group's settings, and each further
    group as {"params": [param node ids], its settings} (torch.optim's parameter groups)."""
    if {id(p) for g in optimizer.param_groups for p in g["params"]} != {id(p) for p in params}:
        raise CaptureError("the optimizer's parameters must be exactly the model's")
    groups = [_group_settings(optimizer, g) for g in optimizer.param_groups]
    spec = dict(groups[0])
    if len(groups) > 1:
        spec["groups"] = []
        for group, settings in zip(optimizer.param_groups[1:], groups[1:]):
            del settings["kind"]
            settings["params"] = [node_of[id(p)] for p in group["params"]]
            spec["groups"].append(settings)
    return spec


def _loss_kind(loss_fn):
    """"cross_entropy" (class indices as targets) or "mse" (targets shaped as the output)."""
    if loss_fn is F.cross_entropy:
        return "cross_entropy"
    if loss_fn is F.mse_loss:
        return "mse"
    if isinstance(loss_fn, torch.nn.CrossEntropyLoss):
        if (loss_fn.reduction != "mean" or loss_fn.weight is not None
                or loss_fn.label_smoothing != 0.0 or loss_fn.ignore_index >= 0):
            raise CaptureError("CrossEntropyLoss is captured with reduction='mean', no class "
                               "weights, no ignore_index and no label smoothing")
        return "cross_entropy"
    if isinstance(loss_fn, torch.nn.MSELoss):
        if loss_fn.reduction != "mean":
            raise CaptureError("MSELoss is captured with reduction='mean'")
        return "mse"
    raise CaptureError(f"the loss {loss_fn!r} is not captured; cross-entropy and mean squared "
                       "error are")


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


def compile_step(model, loss_fn, optimizer, *, tier="prod", backend="auto",
                 allow_software_adapter=False):
    """Captures one training step — forward, a loss (cross-entropy or mean squared error), one
    backward, one optimizer step (SGD with momentum, dampening, Nesterov and weight decay; Adam;
    AdamW; parameter groups of any of them) — for Scellis, which differentiates the forward
    itself. Dropout in the forward is kept: its masks are drawn by PyTorch every step, as eager
    steps draw them, and fed. ``step.prepare(x, y)`` makes weights, gradients and optimizer state
    resident; then ``step(x, y)`` (one step, returns the loss), ``step.steps(batches)`` (64 per
    submission), ``step.sync()`` (writes the weights into the model and the moments into
    ``optimizer.state``), ``step.dispose()``. While prepared, the optimizer's own ``step()`` and a
    second capture of it are refused by name."""
    return CompiledStep(model, loss_fn, optimizer, tier=tier, backend=backend,
                        allow_software_adapter=allow_software_adapter)


class CompiledStep:
    def __init__(self, model, loss_fn, optimizer, tier, backend, allow_software_adapter):
        self.loss = _loss_kind(loss_fn)
        self.model, self.optimizer = model, optimizer
        self.params = [p for p in model.parameters()]
        # Refuses what cannot be captured now, before any batch is seen.
        self.kind = _group_settings(optimizer, optimizer.param_groups[0])["kind"]
        for group in optimizer.param_groups[1:]:
            _group_settings(optimizer, group)
        self.options = (backend, tier, bool(allow_software_adapter))
        self.session = None
        self.shapes = None

    def __repr__(self):
        state = "prepared" if self.session else "not prepared"
        return f"CompiledStep({self.kind}, {self.loss}, {state})"

    def prepare(self, x, y):
        """Captures the step for batches shaped as ``x`` (float32 [N, ...]) and ``y`` (class
        indices [N] for cross-entropy, float32 targets shaped as the output for mean squared
        error) and makes its state resident."""
        if id(self.optimizer) in _live_steps:
            raise CaptureError("this optimizer is already captured by a prepared step; dispose it "
                               "first")
        wf, output, params, self.dropouts = _capture(self.model, x.detach().float())
        if self.loss == "cross_entropy":
            target = wf.node("input", {"name": "target", "shape": [int(x.shape[0])]})
            loss = wf.node("cross_entropy", a=output, target=target)
        else:
            target = wf.node("input", {"name": "target", "shape": list(y.shape)})
            diff = wf.node("sub", a=output, b=target)
            loss = wf.node("mean", a=wf.node("mul", a=diff, b=diff))
        node_of = {id(tensor): node for name, tensor, node in params.values()}
        if len(node_of) != len(self.params):
            raise CaptureError("some of the model's parameters are not used by its forward")
        self.spec = _optimizer_spec(self.optimizer, self.params, node_of)
        # Each parameter's settings: its group's.
        self.momentum = {id(p): float(g.get("momentum", 0)) for g in self.optimizer.param_groups
                         for p in g["params"]}
        doc = {"format": "scellis.workflow/1", "name": "compile_step", "determinism": self.options[1],
               "nodes": wf.nodes, "wires": wf.wires,
               "outputs": [{"name": "loss", "from": loss}],
               "train": {"loss": loss, "optimizer": self.spec}}
        initial = {}
        state = self.optimizer.state
        self.names = {}
        # The engine names a parameter's optimizer state after its node: "<node>@m", "<node>@v",
        # "<node>@velocity".
        for qualified, (name, tensor, node) in params.items():
            self.names[qualified] = (name, tensor, node)
            initial[name] = tensor.detach().contiguous().numpy().astype(np.float32, copy=False)
            s = state.get(tensor, {})
            for ours, theirs in (("m", "exp_avg"), ("v", "exp_avg_sq"), ("velocity", "momentum_buffer")):
                if theirs in s and s[theirs] is not None:
                    initial[f"{node}@{ours}"] = s[theirs].detach().contiguous().numpy()
        self.step_count = int(max((float(state[p]["step"]) for p in self.params
                                   if p in state and "step" in state[p]), default=0))
        # SGD keeps no step count; for the engine, step 1 is the one that starts the velocity
        # from the gradient, so a velocity PyTorch already holds means later steps.
        if self.step_count == 0 and any(state.get(p, {}).get("momentum_buffer") is not None
                                        for p in self.params):
            self.step_count = 1
        backend, tier, allow = self.options
        self.session = _scellis.prepare(json.dumps(doc), backend, tier, allow, 0, initial)
        self.shapes = (tuple(x.shape), tuple(y.shape))
        _live_steps[id(self.optimizer)] = self
        self._eager_step = self.optimizer.step

        def refused(*args, **kwargs):
            raise CaptureError("optimizer.step() is refused while a compiled step holds this "
                               "optimizer's state: call step.sync() and step.dispose() first")
        self.optimizer.step = refused
        return self

    backend = property(lambda self: self.session.backend if self.session else None)
    executor = property(lambda self: self.session.executor if self.session else None)
    fallback_reason = property(lambda self: self.session.fallback_reason if self.session else None)

    def _feeds(self, x, y, t):
        if tuple(x.shape) != self.shapes[0] or tuple(y.shape) != self.shapes[1]:
            raise CaptureError(f"a batch of shape {tuple(x.shape)}, {tuple(y.shape)}; the step was "
                               f"prepared for {self.shapes[0]}, {self.shapes[1]}")
        feeds = {"x": x.detach().contiguous().numpy().astype(np.float32, copy=False),
                 "target": y.detach().contiguous().numpy().astype(np.float32, copy=False),
                 "step": np.float32(t)}
        for d in self.dropouts:
            feeds[d.name] = d.draw()
        return feeds

    def steps(self, batches):
        """Runs one step per (x, y) in ``batches``, 64 per run; returns the losses."""
        if self.session is None:
            raise CaptureError("prepare(x, y) first")
        losses = []
        batches = list(batches)
        for first in range(0, len(batches), 64):
            chunk = batches[first:first + 64]
            feeds = [self._feeds(x, y, self.step_count + i + 1) for i, (x, y) in enumerate(chunk)]
            watched, _ = self.session.run(feeds, ["loss"])
            self.step_count += len(chunk)
            losses.extend(float(v) for v in watched["loss"])
        return losses

    def __call__(self, x, y):
        return self.steps([(x, y)])[0]

    def sync(self):
        """Writes the resident weights into the model's parameters and the moments and step into
        ``optimizer.state``, as eager steps would have left them."""
        if self.session is None:
            raise CaptureError("prepare(x, y) first")
        kind = self.kind
        with torch.no_grad():
            for qualified, (name, tensor, node) in self.names.items():
                tensor.copy_(torch.from_numpy(np.array(self.session.download(name))))
                s = self.optimizer.state[tensor]
                if kind in ("adam", "adamw"):
                    s["exp_avg"] = torch.from_numpy(np.array(self.session.download(f"{node}@m")))
                    s["exp_avg_sq"] = torch.from_numpy(np.array(self.session.download(f"{node}@v")))
                    s["step"] = torch.tensor(float(self.step_count))
                elif self.momentum[id(tensor)] != 0 and self.step_count > 0:
                    s["momentum_buffer"] = torch.from_numpy(np.array(self.session.download(f"{node}@velocity")))

    def dispose(self):
        """Frees the resident state (without writing it back: call sync() first to keep it) and
        gives the optimizer its own step() again."""
        if self.session is not None:
            self.session.dispose()
            self.session = None
            self.optimizer.step = self._eager_step
            _live_steps.pop(id(self.optimizer), None)
