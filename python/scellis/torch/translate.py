"""The translation of one FX node into Scellis ops: a function per PyTorch op, given the
scratch or session Graph, the node's arguments (Scellis tensors where PyTorch had tensors) and
its keyword arguments; what it cannot translate raises _Unsupported with the reason."""

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
