"""Which FX targets the backend translates (torch-level functions and operators, tensor
methods), how a node is named in a report, and which values a Scellis graph takes."""

import operator

import torch
import torch.nn.functional as F

from .translate import (_addmm, _binary, _cast_to, _clamp, _clamp_one, _compare, _dropout,
                        _gelu, _identity, _linear, _masked_fill, _max_min, _reduce, _softmax,
                        _tensor_where, _to, _unary, _where)
from .translate_shape import (_flip, _getattr, _getitem, _join, _narrow, _pad, _permute, _reshape,
                              _select, _t, _transpose)


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
