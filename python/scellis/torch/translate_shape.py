"""The translations of PyTorch's shape, view and indexing ops (reshape and view, permute,
transposes, indexing, flip, narrow, select, pad, cat and stack) into Scellis ops, in the form of
scellis.torch.translate's: a function of the scratch or session Graph, the node's arguments and
its keyword arguments, raising _Unsupported with the reason for what it cannot translate.

What they refuse is a form Scellis has no op for: a bound computed in the forward, a padding mode
other than a constant, a list of tensors of mixed dtypes."""

import torch

from ..tensor import Tensor
from .translate import _Unsupported, _only


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
