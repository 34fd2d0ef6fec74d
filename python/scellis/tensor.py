"""Tensor: a node of a Graph, with the operators and methods that add nodes to it (elementwise
arithmetic and masks, normalisation, reductions; strided views and layout come from
scellis.tensor_layout), and ``concat`` and ``stack`` of a list of them. A Tensor has no value: its
graph runs in the engine (scellis.tensor_values refuses the conversions that would read one).

Every shape and dtype is the engine's: it types each node as it is added (see scellis.graph).
"""

import numbers

import numpy as np

from .errors import GraphError
from .tensor_layout import _Layout, _axis
from .tensor_values import _NoValue

_DTYPES = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "u32": np.uint32,
           "bool": np.bool_}


def _dtype_name(dtype):
    if dtype is None:
        return "f32"
    if isinstance(dtype, str) and dtype in _DTYPES:
        return dtype
    try:
        np_dtype = np.dtype(dtype)
    except TypeError:
        np_dtype = None
    for name, t in _DTYPES.items():
        if np_dtype is not None and np.dtype(t) == np_dtype:
            return name
    raise GraphError("bad-dtype", f"the dtype {dtype!r} is not one the engine stores",
                     help="use f32, f16, i32, u32 or bool")


class Tensor(_NoValue, _Layout):
    """A node of a Graph. Operators and methods add nodes; nothing is computed until the graph
    runs. ``shape`` and ``dtype`` are the engine's (a source's: as declared)."""

    __slots__ = ("graph", "id", "shape", "dtype")
    # NumPy defers to the reflected operators (np.float32(2) * t is a Tensor, not an object array).
    __array_ufunc__ = None

    def __init__(self, graph, node_id, shape, dtype):
        self.graph = graph
        self.id = node_id
        self.shape = shape
        self.dtype = dtype

    def __repr__(self):
        node = self.graph._nodes[self.id]
        return f"Tensor(#{self.id} {node['op']}, shape={self.shape}, dtype={self.dtype})"

    @property
    def ndim(self):
        return len(self.shape)

    # ---- arithmetic: broadcasting + - * /, scalars as the op's `scalar` attribute ----

    def _binary(self, op, other, reverse=False):
        g = self.graph
        if isinstance(other, Tensor):
            a, b = (other, self) if reverse else (self, other)
            return g._add(op, {"a": a, "b": b})
        if isinstance(other, numbers.Real) and not isinstance(other, bool):
            s = float(other)
            if not reverse or op in ("add", "mul", "bitwise_and", "bitwise_or", "bitwise_xor"):
                return g._add(op, {"a": self}, {"scalar": s})
            if op == "sub":  # s - x = x * -1 + s: both exact in f32
                return (self * -1.0)._binary("add", s)
            if op == "div":  # s / x, with s as a tensor of x's shape
                return g.full(self.shape, s)._binary("div", self)
        return NotImplemented

    def __add__(self, o): return self._binary("add", o)
    def __radd__(self, o): return self._binary("add", o, reverse=True)
    def __sub__(self, o): return self._binary("sub", o)
    def __rsub__(self, o): return self._binary("sub", o, reverse=True)
    def __mul__(self, o): return self._binary("mul", o)
    def __rmul__(self, o): return self._binary("mul", o, reverse=True)
    def __truediv__(self, o): return self._binary("div", o)
    def __rtruediv__(self, o): return self._binary("div", o, reverse=True)
    def __neg__(self): return self._unary("neg")
    # Bit operations on i32 and u32 tensors (protocol version 6), as torch's operators.
    def __and__(self, o): return self._binary("bitwise_and", o)
    def __rand__(self, o): return self._binary("bitwise_and", o, reverse=True)
    def __or__(self, o): return self._binary("bitwise_or", o)
    def __ror__(self, o): return self._binary("bitwise_or", o, reverse=True)
    def __xor__(self, o): return self._binary("bitwise_xor", o)
    def __rxor__(self, o): return self._binary("bitwise_xor", o, reverse=True)
    def __lshift__(self, o): return self._binary("shift_left", o)
    def __rshift__(self, o): return self._binary("shift_right", o)

    def __matmul__(self, other):
        if not isinstance(other, Tensor):
            return NotImplemented
        return self.graph._add("matmul", {"a": self, "b": other})

    # ---- elementwise ----

    def maximum(self, other):
        """Elementwise max with broadcasting (protocol version 3): NaN propagates, equal operands
        give self, as torch.maximum."""
        return self._binary("maximum", other)

    def minimum(self, other):
        """Elementwise min with broadcasting (protocol version 3), as torch.minimum."""
        return self._binary("minimum", other)

    # ---- masks (protocol version 3) ----

    def _compare(self, op, other):
        g = self.graph
        if isinstance(other, Tensor):
            return g._add(op, {"a": self, "b": other})
        if isinstance(other, numbers.Real) and not isinstance(other, bool):
            return g._add(op, {"a": self}, {"scalar": float(other)})
        return NotImplemented

    def eq(self, other):
        """self == other elementwise (a tensor or a number), a bool mask; NaN equals nothing.
        (``==`` keeps Python's identity meaning: Tensors are dictionary keys.)"""
        return self._compare("eq", other)

    def ne(self, other):
        """self != other elementwise, a bool mask; true where either is NaN."""
        return self._compare("ne", other)

    def lt(self, other): return self._compare("lt", other)
    def le(self, other): return self._compare("le", other)
    def gt(self, other): return self._compare("gt", other)
    def ge(self, other): return self._compare("ge", other)
    __lt__, __le__, __gt__, __ge__ = lt, le, gt, ge

    def where(self, condition, other):
        """self where ``condition`` (a bool mask) is true, else ``other`` — PyTorch's
        ``Tensor.where``; the three broadcast together."""
        return self.graph.where(condition, self, other)

    def masked_fill(self, mask, value):
        """``value`` where ``mask`` (bool, broadcasting with self) is true, else self."""
        return self.graph._add("masked_fill", {"a": self, "mask": mask}, {"value": float(value)})

    def clamp(self, min=None, max=None):
        """minimum(maximum(self, min), max), as torch.clamp: either bound may be left out; NaN
        stays NaN."""
        attrs = {k: float(v) for k, v in (("min", min), ("max", max)) if v is not None}
        if not attrs:
            raise GraphError("missing-attribute", "clamp needs min, max or both")
        return self.graph._add("clamp", {"a": self}, attrs)

    def cast(self, dtype):
        """self converted to ``dtype`` ("f32" or "bool"): to bool, self != 0 (NaN is true); from
        bool, 0 or 1."""
        dtype = _dtype_name(dtype)
        return self.graph._add("cast", {"a": self}, {"dtype": dtype})

    def _unary(self, op):
        return self.graph._add(op, {"a": self})

    def relu(self): return self._unary("relu")
    def gelu(self): return self._unary("gelu")
    def sigmoid(self): return self._unary("sigmoid")
    def tanh(self): return self._unary("tanh")
    def exp(self): return self._unary("exp")
    def log(self): return self._unary("log")
    def sqrt(self): return self._unary("sqrt")
    def neg(self): return self._unary("neg")
    def positive(self):
        """1 where the element is > 0 (or NaN), else 0: relu's derivative."""
        return self._unary("positive")
    def life(self):
        """One Game-of-Life step on a toroidal grid of 0/1 cells."""
        return self._unary("life")

    def gelu_grad(self, upstream):
        """upstream * gelu'(self)."""
        return self.graph._add("gelu_grad", {"a": self, "b": upstream})

    # ---- normalisation and loss ----

    def _over_last_axis(self, op, axis):
        last, axis = self.ndim - 1, _axis(axis, self.ndim)
        if axis == last:
            return self._unary(op)
        # The engine's op works over the last axis: move `axis` there and back (data movement);
        # an axis out of range makes a permutation the engine refuses.
        dims = [last if d == axis else axis if d == last else d for d in range(last + 1)]
        return self.permute(*dims)._unary(op).permute(*dims)

    def softmax(self, axis=-1): return self._over_last_axis("softmax", axis)
    def log_softmax(self, axis=-1): return self._over_last_axis("log_softmax", axis)

    def cross_entropy(self, target):
        """Mean over rows of -log_softmax(self)[target]; target holds class indices (f32)."""
        return self.graph._add("cross_entropy", {"a": self, "target": target})

    def cross_entropy_grad(self, target, upstream):
        """(softmax(self) - onehot(target)) / N * upstream: the gradient of cross_entropy."""
        return self.graph._add("cross_entropy_grad",
                               {"a": self, "target": target, "b": upstream})

    # ---- reductions ----

    def _reduce(self, op, axis, keepdim):
        if axis is not None and not isinstance(axis, numbers.Integral):
            raise GraphError("bad-axis", f"{op} takes one axis or None, got {axis!r}",
                             help=f"reduce one axis at a time: x.{op}(0).{op}(0)")
        attrs = {}
        if axis is not None:
            attrs["axis"] = int(axis)
        if keepdim:
            attrs["keepdim"] = True
        return self.graph._add(op, {"a": self}, attrs)

    def sum(self, axis=None, keepdim=False): return self._reduce("sum", axis, keepdim)
    def mean(self, axis=None, keepdim=False): return self._reduce("mean", axis, keepdim)

def _graph_of(tensors, what):
    """The Graph the entries of a list belong to (the first one's; the rest are checked to be
    of it when the node is added)."""
    tensors = list(tensors)
    if not tensors:
        raise GraphError("empty-input-list", f"{what} of an empty list of tensors",
                         help="list at least one tensor")
    if not isinstance(tensors[0], Tensor):
        raise TypeError(f"expected a scellis Tensor, got {type(tensors[0]).__name__}")
    return tensors[0].graph, tensors


def concat(tensors, axis=0):
    """The ``tensors`` (of one graph, one dtype and rank, equal sizes but along ``axis``)
    joined along ``axis`` in list order, as torch.cat: ``Graph.concat`` on their graph."""
    g, tensors = _graph_of(tensors, "concat")
    return g.concat(tensors, axis)


def stack(tensors, axis=0):
    """The ``tensors`` (of one graph, one dtype and shape) joined along a new axis inserted at
    ``axis``, as torch.stack: ``Graph.stack`` on their graph."""
    g, tensors = _graph_of(tensors, "stack")
    return g.stack(tensors, axis)
