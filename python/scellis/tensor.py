"""Tensor: a node of a Graph, with the operators and methods that add nodes to it (elementwise
arithmetic and masks, strided views, normalisation, reductions, layout), and ``concat`` and
``stack`` of a list of them. A Tensor has no value: its graph runs in the engine.

Every shape and dtype is the engine's: it types each node as it is added (see scellis.graph).
"""

import numbers

import numpy as np

from .errors import GraphError, TraceError

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


def _trace_error(code, message, help=""):
    return TraceError(code, message, help=help)


def _stale(t):
    what = repr(t) if t is not None else "a tensor"
    return _trace_error(
        "stale-handle",
        f"{what} belongs to an earlier, finished trace of a pipeline: tensors of a trace are "
        "symbolic and die with it",
        help="keep no tensors between calls; return them from the pipeline and use the arrays")


def _axis(axis, rank):
    """A Python axis (negative from the end) as an index."""
    return axis + rank if axis < 0 else axis


class Tensor:
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

    # ---- values: a Tensor has none until its graph runs ----

    def _read(self, what):
        if self.graph._trace is not None:
            raise _trace_error(
                "value-read-in-trace",
                f"{what} reads the value of {self!r} inside a traced pipeline, where tensors are "
                "symbolic: the function is traced once and its values exist only when it runs",
                help="compute with tensor ops (where(), maximum() ...) and read the pipeline's "
                     "result")
        raise TypeError(f"{what}: a scellis Tensor has no value until its graph runs; read the "
                        "RunResult's outputs")

    def __float__(self): return self._read("float()")
    def __int__(self): return self._read("int()")
    def __index__(self):
        if self.graph._trace is not None:  # range(t), a list index: a count only data knows
            raise _trace_error(
                "loop-count-not-static",
                f"{self!r} is used as a Python int (a range() bound, a list index) inside a "
                "traced pipeline, where its value is not known",
                help="loop a static count (a Python int, or a constant argument of the "
                     "pipeline); select with where() instead of indexing by value")
        return self._read("using a tensor as an index")
    def __complex__(self): return self._read("complex()")
    def item(self): return self._read("item()")
    def tolist(self): return self._read("tolist()")
    def numpy(self): return self._read("numpy()")

    def __array__(self, dtype=None, copy=None):
        return self._read("converting to a NumPy array")

    def __bool__(self):
        if self.graph._trace is not None:
            raise _trace_error(
                "data-dependent-control-flow",
                f"the truth value of {self!r} decides Python control flow (if, while, and, or) "
                "inside a traced pipeline: the trace records one path, so the branch cannot "
                "depend on data",
                help="select with where(condition, a, b); loop a static count with "
                     "scellis.loop or range(n)")
        return True

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

    # ---- strided views (protocol version 4) ----

    def __getitem__(self, key):
        """Python/NumPy basic indexing: slices (negative steps too), integers (the axis is
        dropped) and one Ellipsis — a `slice` node, and a reshape when integers drop axes."""
        rank = len(self.shape)
        key = key if isinstance(key, tuple) else (key,)
        if sum(k is Ellipsis for k in key) > 1:
            raise GraphError("bad-index", "an index holds at most one Ellipsis")
        if Ellipsis in key:
            at = key.index(Ellipsis)
            key = key[:at] + (slice(None),) * (rank - len(key) + 1) + key[at + 1:]
        if len(key) > rank:
            raise GraphError("bad-index", f"{len(key)} indices for a tensor of rank {rank}")
        key = key + (slice(None),) * (rank - len(key))
        starts, stops, steps, kept = [], [], [], []
        for axis, (k, size) in enumerate(zip(key, self.shape)):
            if isinstance(k, numbers.Integral) and not isinstance(k, bool):
                i = int(k) + size if int(k) < 0 else int(k)
                if not 0 <= i < size:
                    raise GraphError("index-out-of-range",
                                     f"index {int(k)} is out of range for axis {axis} of size {size}")
                starts.append(i), stops.append(i + 1), steps.append(1)
            elif isinstance(k, slice):
                step = 1 if k.step is None else int(k.step)
                if step == 0:
                    raise GraphError("bad-index", "a slice step cannot be zero")
                starts.append(None if k.start is None else int(k.start))
                stops.append(None if k.stop is None else int(k.stop))
                steps.append(step)
                kept.append(axis)
            else:
                raise GraphError("bad-index", f"{k!r} is not a slice, an integer or Ellipsis",
                                 help="index with tensors through the engine's gather ops")
        out = self.graph._add("slice", {"a": self},
                              {"starts": starts, "stops": stops, "steps": steps})
        if len(kept) < rank:
            out = out.reshape(*[out.shape[a] for a in kept])
        return out

    def flip(self, *axes):
        """Reverses the order of elements along ``axes``."""
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return self.graph._add("flip", {"a": self}, {"axes": [int(a) for a in axes]})

    def shift(self, shifts, boundary="zero"):
        """``out[i] = self[i - shifts]`` along every axis (torch.roll's direction; protocol
        version 5). ``shifts``: one integer per axis, or one integer for a rank-1 tensor.
        ``boundary`` says what is read where ``i - shifts`` leaves the axis: "zero" (0), "wrap"
        (the toroidal neighbour, as torch.roll / np.roll) or "clamp" (the nearest edge element).
        The engine fuses a shift into its consumers' kernel as a shifted load, so a stencil
        written as a sum of shifts is one kernel."""
        if isinstance(shifts, numbers.Integral):
            shifts = [shifts]
        shifts = [int(s) for s in shifts]
        return self.graph._add("shift", {"a": self}, {"shifts": shifts, "boundary": boundary})

    def butterfly(self, mask, axis=-1):
        """``out[.., i, ..] = self[.., i ^ mask, ..]`` along ``axis`` (protocol version 6): each
        element's partner in a bitonic stage. Fused into its readers' kernel as a permuted load;
        the engine refuses (butterfly-out-of-range) a mask whose partners leave the axis."""
        return self.graph._add("butterfly", {"a": self}, {"mask": int(mask), "axis": int(axis)})

    def roll(self, shifts, dims=None):
        """torch.roll over the given ``dims`` (every axis when None, as a flattened roll is
        not a shift): a ``shift`` with the "wrap" boundary."""
        rank = len(self.shape)
        if isinstance(shifts, numbers.Integral):
            shifts = [shifts]
        if dims is None:
            if len(shifts) != rank:
                raise GraphError("bad-shift", f"roll without dims takes one shift per axis "
                                 f"({rank}), got {len(shifts)}",
                                 help="name the axes with dims=")
            dims = range(rank)
        elif isinstance(dims, numbers.Integral):
            dims = [dims]
        dims = list(dims)
        if len(dims) != len(shifts):
            raise GraphError("bad-shift", "roll takes one shift per named axis")
        per_axis = [0] * rank
        for s, d in zip(shifts, dims):
            per_axis[_axis(int(d), rank)] += int(s)
        return self.shift(per_axis, boundary="wrap")

    def pad(self, pads, value=0.0):
        """Constant padding: ``pads`` holds one (before, after) pair per axis."""
        pads = [[int(b), int(a)] for b, a in pads]
        return self.graph._add("pad", {"a": self}, {"pads": pads, "value": float(value)})

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

    # ---- layout ----

    def permute(self, *dims):
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        return self.graph._add("permute", {"a": self}, {"dims": [int(d) for d in dims]})

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return self.graph._add("reshape", {"a": self}, {"shape": [int(s) for s in shape]})

    def transpose(self, dim0=None, dim1=None):
        """Swaps two axes: a rank-2 tensor's with no arguments (the `transpose` op), any two
        otherwise (a `permute`)."""
        if dim0 is None and dim1 is None:
            return self.graph._add("transpose", {"a": self})
        if dim0 is None or dim1 is None:
            raise GraphError("bad-axis", "transpose takes no axes (rank 2) or two axes")
        dims = list(range(self.ndim))
        dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
        return self.permute(*dims)

    @property
    def T(self):
        return self.transpose()


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
