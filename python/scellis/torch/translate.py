"""The translation of one FX node into Scellis ops: a function per PyTorch op, given the
scratch or session Graph, the node's arguments (Scellis tensors where PyTorch had tensors) and
its keyword arguments; what it cannot translate raises _Unsupported with the reason.

Arithmetic, activations, reductions, linear layers, comparisons, selection, clamps, casts and
dropout are here; the shape, view and indexing ops (reshape, permute, transposes, indexing, pad,
cat and stack) in translate_shape."""

import operator

import torch

from ..tensor import Tensor


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
