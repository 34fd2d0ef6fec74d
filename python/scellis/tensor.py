"""Tensor: a node of a Graph, with the operators and methods that add nodes to it (elementwise
arithmetic and masks, strided views, normalisation, reductions, layout). A Tensor has no value:
its graph runs in the engine.

Shapes are tracked here only as far as this side can tell (None when it cannot): the engine's
diagnostics are the authority on what is valid.
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


def _broadcast(a, b):
    if a is None or b is None:
        return None
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None  # the engine names the mismatch, with the node's pointer


def _matmul_shape(a, b):
    if a is None or b is None or len(a) < 2 or len(b) < 2:
        return None
    batch = _broadcast(a[:-2], b[:-2])
    return None if batch is None else batch + (a[-2], b[-1])


def _axis(axis, rank):
    return axis + rank if axis is not None and rank is not None and axis < 0 else axis


class Tensor:
    """A node of a Graph. Operators and methods add nodes; nothing is computed until the graph
    runs. ``shape`` is the shape as far as this side can tell (None when it cannot)."""

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
        return None if self.shape is None else len(self.shape)

    # ---- arithmetic: broadcasting + - * /, scalars as the op's `scalar` attribute ----

    def _binary(self, op, other, reverse=False):
        g = self.graph
        if isinstance(other, Tensor):
            g._check_own(other)
            a, b = (other, self) if reverse else (self, other)
            return g._add(op, {"a": a, "b": b}, shape=_broadcast(a.shape, b.shape),
                          dtype=a.dtype)
        if isinstance(other, numbers.Real) and not isinstance(other, bool):
            s = float(other)
            if not reverse or op in ("add", "mul", "bitwise_and", "bitwise_or", "bitwise_xor"):
                return g._add(op, {"a": self}, {"scalar": s}, shape=self.shape, dtype=self.dtype)
            if op == "sub":  # s - x = x * -1 + s: both exact in f32
                return (self * -1.0)._binary("add", s)
            if op == "div":  # s / x, with s as a tensor of x's shape
                if self.shape is None:
                    raise GraphError("unknown-shape",
                                     f"{s} / x needs the shape of x, which is not known here",
                                     help="divide by a tensor from Graph.full instead")
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
        self.graph._check_own(other)
        return self.graph._add("matmul", {"a": self, "b": other},
                               shape=_matmul_shape(self.shape, other.shape), dtype=self.dtype)

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
        if self.shape is None:
            raise GraphError("unknown-shape", "indexing needs the tensor's shape, which is not "
                             "known here", help="give the input a shape")
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
        starts, stops, steps, shape, kept = [], [], [], [], []
        for axis, (k, size) in enumerate(zip(key, self.shape)):
            if isinstance(k, numbers.Integral) and not isinstance(k, bool):
                i = int(k) + size if int(k) < 0 else int(k)
                if not 0 <= i < size:
                    raise GraphError("index-out-of-range",
                                     f"index {int(k)} is out of range for axis {axis} of size {size}")
                starts.append(i), stops.append(i + 1), steps.append(1), shape.append(1)
            elif isinstance(k, slice):
                step = 1 if k.step is None else int(k.step)
                if step == 0:
                    raise GraphError("bad-index", "a slice step cannot be zero")
                starts.append(None if k.start is None else int(k.start))
                stops.append(None if k.stop is None else int(k.stop))
                steps.append(step)
                shape.append(len(range(*slice(k.start, k.stop, step).indices(size))))
                kept.append(axis)
            else:
                raise GraphError("bad-index", f"{k!r} is not a slice, an integer or Ellipsis",
                                 help="index with tensors through the engine's gather ops")
        out = self.graph._add("slice", {"a": self},
                              {"starts": starts, "stops": stops, "steps": steps},
                              shape=tuple(shape), dtype=self.dtype)
        if len(kept) < rank:
            out = out.reshape(*[shape[a] for a in kept])
        return out

    def flip(self, *axes):
        """Reverses the order of elements along ``axes``."""
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return self.graph._add("flip", {"a": self}, {"axes": [int(a) for a in axes]},
                               shape=self.shape, dtype=self.dtype)

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
        return self.graph._add("shift", {"a": self}, {"shifts": shifts, "boundary": boundary},
                               shape=self.shape, dtype=self.dtype)

    def butterfly(self, mask, axis=-1):
        """``out[.., i, ..] = self[.., i ^ mask, ..]`` along ``axis`` (protocol version 6): each
        element's partner in a bitonic stage. Fused into its readers' kernel as a permuted load;
        the engine refuses (butterfly-out-of-range) a mask whose partners leave the axis."""
        return self.graph._add("butterfly", {"a": self}, {"mask": int(mask), "axis": int(axis)},
                               shape=self.shape, dtype=self.dtype)

    def roll(self, shifts, dims=None):
        """torch.roll over the given ``dims`` (every axis when None, as a flattened roll is
        not a shift): a ``shift`` with the "wrap" boundary."""
        if self.shape is None:
            raise GraphError("unknown-shape", "roll needs the tensor's rank, which is not known "
                             "here", help="use shift() with one entry per axis")
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
        shape = None
        if self.shape is not None and len(pads) == len(self.shape):
            shape = tuple(s + b + a for s, (b, a) in zip(self.shape, pads))
        return self.graph._add("pad", {"a": self}, {"pads": pads, "value": float(value)},
                               shape=shape, dtype=self.dtype)

    # ---- masks (protocol version 3) ----

    def _compare(self, op, other):
        g = self.graph
        if isinstance(other, Tensor):
            g._check_own(other)
            return g._add(op, {"a": self, "b": other}, shape=_broadcast(self.shape, other.shape),
                          dtype="bool")
        if isinstance(other, numbers.Real) and not isinstance(other, bool):
            return g._add(op, {"a": self}, {"scalar": float(other)}, shape=self.shape,
                          dtype="bool")
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
        self.graph._check_own(mask)
        return self.graph._add("masked_fill", {"a": self, "mask": mask}, {"value": float(value)},
                               shape=self.shape, dtype=self.dtype)

    def clamp(self, min=None, max=None):
        """minimum(maximum(self, min), max), as torch.clamp: either bound may be left out; NaN
        stays NaN."""
        attrs = {k: float(v) for k, v in (("min", min), ("max", max)) if v is not None}
        if not attrs:
            raise GraphError("missing-attribute", "clamp needs min, max or both")
        return self.graph._add("clamp", {"a": self}, attrs, shape=self.shape, dtype=self.dtype)

    def cast(self, dtype):
        """self converted to ``dtype`` ("f32" or "bool"): to bool, self != 0 (NaN is true); from
        bool, 0 or 1."""
        dtype = _dtype_name(dtype)
        return self.graph._add("cast", {"a": self}, {"dtype": dtype}, shape=self.shape,
                               dtype=dtype)

    def _unary(self, op):
        return self.graph._add(op, {"a": self}, shape=self.shape, dtype=self.dtype)

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
        self.graph._check_own(upstream)
        return self.graph._add("gelu_grad", {"a": self, "b": upstream}, shape=self.shape,
                               dtype=self.dtype)

    # ---- normalisation and loss ----

    def _over_last_axis(self, op, axis):
        rank = self.ndim
        axis = _axis(axis, rank)
        if axis is None or rank is None or axis == rank - 1:
            return self._unary(op)
        if not 0 <= axis < rank:
            raise GraphError("bad-axis", f"the axis {axis} is out of range for rank {rank}")
        # The engine's op works over the last axis: move `axis` there and back (data movement).
        dims = list(range(rank))
        dims[axis], dims[-1] = dims[-1], dims[axis]
        return self.permute(*dims)._unary(op).permute(*dims)

    def softmax(self, axis=-1): return self._over_last_axis("softmax", axis)
    def log_softmax(self, axis=-1): return self._over_last_axis("log_softmax", axis)

    def cross_entropy(self, target):
        """Mean over rows of -log_softmax(self)[target]; target holds class indices (f32)."""
        self.graph._check_own(target)
        return self.graph._add("cross_entropy", {"a": self, "target": target}, shape=(),
                               dtype=self.dtype)

    def cross_entropy_grad(self, target, upstream):
        """(softmax(self) - onehot(target)) / N * upstream: the gradient of cross_entropy."""
        self.graph._check_own(target)
        self.graph._check_own(upstream)
        return self.graph._add("cross_entropy_grad",
                               {"a": self, "target": target, "b": upstream}, shape=self.shape,
                               dtype=self.dtype)

    # ---- reductions ----

    def _reduce(self, op, axis, keepdim):
        if axis is not None and not isinstance(axis, numbers.Integral):
            raise GraphError("bad-axis", f"{op} takes one axis or None, got {axis!r}",
                             help=f"reduce one axis at a time: x.{op}(0).{op}(0)")
        rank = self.ndim
        axis = _axis(axis, rank)
        attrs = {}
        if axis is not None:
            attrs["axis"] = int(axis)
        if keepdim:
            attrs["keepdim"] = True
        shape = None
        if rank is not None:
            if axis is None:
                shape = (1,) * rank if keepdim else ()
            elif 0 <= axis < rank:
                shape = tuple(1 if keepdim and i == axis else s
                              for i, s in enumerate(self.shape) if keepdim or i != axis)
        return self.graph._add(op, {"a": self}, attrs, shape=shape, dtype=self.dtype)

    def sum(self, axis=None, keepdim=False): return self._reduce("sum", axis, keepdim)
    def mean(self, axis=None, keepdim=False): return self._reduce("mean", axis, keepdim)

    # ---- layout ----

    def permute(self, *dims):
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        dims = [int(d) for d in dims]
        shape = None
        if self.shape is not None and sorted(d % len(self.shape) for d in dims) == list(
                range(len(self.shape))) and len(dims) == len(self.shape):
            shape = tuple(self.shape[d] for d in dims)
        return self.graph._add("permute", {"a": self}, {"dims": dims}, shape=shape,
                               dtype=self.dtype)

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = [int(s) for s in shape]
        out = tuple(shape)
        if -1 in shape and self.shape is not None and shape.count(-1) == 1:
            known = int(np.prod([s for s in shape if s != -1]))
            total = int(np.prod(self.shape))
            out = tuple(total // known if s == -1 else s for s in shape) if known else None
        elif -1 in shape:
            out = None
        return self.graph._add("reshape", {"a": self}, {"shape": shape}, shape=out,
                               dtype=self.dtype)

    def transpose(self, dim0=None, dim1=None):
        """Swaps two axes: a rank-2 tensor's with no arguments (the `transpose` op), any two
        otherwise (a `permute`)."""
        if dim0 is None and dim1 is None:
            shape = None if self.shape is None else tuple(reversed(self.shape))
            return self.graph._add("transpose", {"a": self}, shape=shape, dtype=self.dtype)
        if dim0 is None or dim1 is None or self.ndim is None:
            raise GraphError("bad-axis", "transpose takes no axes (rank 2) or two axes of a "
                             "tensor of known rank")
        dims = list(range(self.ndim))
        dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
        return self.permute(*dims)

    @property
    def T(self):
        return self.transpose()
