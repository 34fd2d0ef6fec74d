"""Graph and Tensor: a graph of tensor ops built with methods and operators, serialised to the
engine's graph protocol (plain JSON data) and run, lowered, planned or prepared by the engine.

The graph is plain data: every method adds one node of an op the engine's table has (an op it
lacks is an UnsupportedOpError, never an imitation) and the engine validates the document when it
runs. Shapes are tracked here only to label the document with the lowest protocol version it
needs and to build composite forms (``2 / x``, a softmax over a leading axis); the engine's
diagnostics are the authority on what is valid.
"""

import json
import numbers

import numpy as np

from . import _scellis
from . import ops as _ops
from .errors import GraphError, TraceError, UnsupportedOpError
from .result import RunResult
from .session import Session
from . import worker as _worker

_DTYPES = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "u32": np.uint32,
           "bool": np.bool_}
# Keyword arguments of run/submit/prepare/lower/plan that are options, not output names.
_RESERVED = ("backend", "tier", "allow_software_adapter", "threads", "feeds", "carry",
             "resident", "callback", "on_error", "rung", "json", "executor")


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


def _version_of_features(spec, ports, attrs):
    """The protocol version the forms of a node need beyond its op's own (the protocol's rules,
    which the engine holds a graph to): broadcasting two non-scalar shapes, a reduction over one
    axis or with keepdim, a batched matmul. An unknown shape counts as the newer form."""
    op, attrs = spec["name"], attrs or {}
    if op in ("sum", "mean") and (attrs.get("axis") is not None or attrs.get("keepdim")):
        return 2
    shapes = [ports[p].shape for p in ("a", "b") if p in ports]
    if op == "matmul" and any(s is None or len(s) > 2 for s in shapes):
        return 2
    if (spec["family"] == "elementwise" and len(shapes) == 2 and shapes[0] != shapes[1]
            and () not in shapes):
        return 2
    return 1


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
            if not reverse or op in ("add", "mul"):
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


class Graph:
    """A graph of tensor ops, built in Python and executed by the engine.

    ``version``: the graph protocol version to label the document with; None labels it with the
    lowest version its nodes need (so an older engine refuses it rather than misreading it).
    """

    def __init__(self, version=None, name=None):
        self.version = version
        self.name = name
        self._nodes = []      # graph-protocol node objects, index = id
        self._needs = []      # per node: the lowest protocol version it needs
        self._types = []      # per node: (shape or None, dtype) as far as this side can tell
        self._arrays = {}     # input name -> its value (a graph constant, snapshotted)
        self._names = {}      # input/param name -> node id
        self._trace = None    # the pipeline trace this graph records, if any (scellis.pipeline)

    def __repr__(self):
        return f"Graph({len(self._nodes)} nodes, version={self.version})"

    # ---- sources ----

    def _check_own(self, t):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected a scellis Tensor, got {type(t).__name__}")
        for g in (self, t.graph):
            if g._trace is not None and g._trace.done:
                raise _stale(t if g is t.graph else None)
        if t.graph is not self:
            raise GraphError("foreign-tensor", f"{t!r} belongs to another graph")

    def _source_name(self, name):
        if not isinstance(name, str) or not name:
            raise GraphError("bad-name", f"an input's name is a non-empty string, got {name!r}")
        if name in self._names:
            raise GraphError("duplicate-name", f"the graph already has an input named {name!r}",
                             help="feeds, carries and downloads find inputs by name")
        return name

    def input(self, name, value, dtype=None):
        """An input: ``value`` is its data (an array or a list of numbers, copied now and
        converted to ``dtype``, f32 unless given) or, as a tuple of ints, only its shape (then it
        is fed when the graph runs)."""
        name = self._source_name(name)
        dtype = _dtype_name(dtype)
        if isinstance(value, tuple):
            shape = tuple(int(s) for s in value)
            return self._add("input", {}, {"name": name, "shape": list(shape), "dtype": dtype},
                             shape=shape, dtype=dtype, source=name)
        array = np.array(value, dtype=_DTYPES[dtype], copy=True, order="C")
        node = self._add("input", {}, {"name": name, "shape": list(array.shape), "dtype": dtype},
                         shape=array.shape, dtype=dtype, source=name)
        self._arrays[name] = array
        return node

    def param(self, name, value=None, *, shape=None, init="kaiming_uniform", seed=0, **init_args):
        """A trainable tensor. With ``value`` (an array) it starts from that value; otherwise it
        has ``shape`` and the engine's seeded initializer ``init`` ("kaiming_uniform", "uniform"
        with low/high, "zeros", "ones", or the protocol's init object)."""
        if value is not None:
            return self.input(name, value)
        if shape is None:
            raise GraphError("missing-shape", f"the param {name!r} needs a value or a shape")
        name = self._source_name(name)
        spec = dict(init) if isinstance(init, dict) else {"kind": init, **init_args}
        if spec.get("kind") in ("uniform", "kaiming_uniform"):
            spec.setdefault("seed", seed)
        shape = tuple(int(s) for s in shape)
        return self._add("param", {}, {"name": name, "shape": list(shape), "init": spec},
                         shape=shape, dtype="f32", source=name)

    def full(self, shape, value):
        """A tensor of ``shape`` filled with ``value``."""
        shape = tuple(int(s) for s in shape)
        return self._add("full", {}, {"shape": list(shape), "value": float(value)}, shape=shape,
                         dtype="f32")

    # ---- ops ----

    def where(self, condition, a, b):
        """``a`` where ``condition`` (a bool mask) is true, else ``b``; a number for ``a`` or
        ``b`` is a rank-0 constant. The three broadcast together (protocol version 3)."""
        def operand(x):
            if isinstance(x, Tensor):
                self._check_own(x)
                return x
            return self.full((), x)
        a, b = operand(a), operand(b)
        self._check_own(condition)
        shape = _broadcast(condition.shape, _broadcast(a.shape, b.shape))
        return self._add("where", {"cond": condition, "a": a, "b": b}, shape=shape,
                         dtype=a.dtype)

    def op(self, op, **ports_and_attrs):
        """Adds a node of any op in the engine's table: Tensor keyword arguments are its ports,
        the rest its attributes. The result's shape is not tracked here."""
        ports = {k: v for k, v in ports_and_attrs.items() if isinstance(v, Tensor)}
        attrs = {k: v for k, v in ports_and_attrs.items() if not isinstance(v, Tensor)}
        for t in ports.values():
            self._check_own(t)
        return self._add(op, ports, attrs, shape=None, dtype="f32")

    def sgd(self, param, grad, lr=1e-3, weight_decay=0.0, maximize=False):
        """The parameter after one SGD step (``sgd_update``)."""
        return self._optimizer("sgd_update", {"param": param, "grad": grad},
                               {"lr": lr, "weight_decay": weight_decay, "maximize": maximize})

    def momentum(self, param, grad, velocity, t, lr=1e-3, momentum=0.9, dampening=0.0,
                 weight_decay=0.0, nesterov=False, maximize=False):
        """(parameter, velocity) after one SGD-with-momentum step at step count ``t`` (a scalar
        tensor; at t <= 1 the velocity starts as the gradient, as in PyTorch)."""
        ports = {"param": param, "grad": grad, "velocity": velocity, "t": t}
        attrs = {"lr": lr, "momentum": momentum, "dampening": dampening,
                 "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize}
        return (self._optimizer("momentum_update", ports, attrs),
                self._optimizer("momentum_velocity", ports, attrs))

    def adam(self, param, grad, m, v, t, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
             weight_decay=None, decoupled=False, maximize=False):
        """(parameter, m, v) after one Adam step (AdamW with ``decoupled=True``) at step count
        ``t`` (a scalar tensor, 1 on the first step)."""
        ports = {"param": param, "grad": grad, "m": m, "v": v, "t": t}
        attrs = {"lr": lr, "beta1": beta1, "beta2": beta2, "eps": eps, "decoupled": decoupled,
                 "maximize": maximize}
        if weight_decay is not None:
            attrs["weight_decay"] = weight_decay
        return (self._optimizer("adam_update", ports, attrs),
                self._optimizer("adam_m", ports, attrs),
                self._optimizer("adam_v", ports, attrs))

    def _optimizer(self, op, ports, attrs):
        for t in ports.values():
            self._check_own(t)
        return self._add(op, ports, attrs, shape=ports["param"].shape, dtype="f32")

    def _add(self, op, ports, attrs=None, shape=None, dtype="f32", source=None):
        if self._trace is not None and self._trace.done:
            raise _stale(next(iter(ports.values()), None))
        spec = _ops.table().get(op)
        if spec is None:
            raise UnsupportedOpError(
                "unknown-op", f"the engine's op table has no op \"{op}\"",
                help="ops this build has: " + ", ".join(_ops.names()))
        node = {"id": len(self._nodes), "op": op}
        for port, t in ports.items():
            node[port] = t.id
        for key, value in (attrs or {}).items():
            node[key] = value
        # Everything is checked before the graph changes: a refused node leaves no trace.
        self._nodes.append(node)
        self._needs.append(max(spec["min_version"], _version_of_features(spec, ports, attrs)))
        self._types.append((None if shape is None else tuple(shape), dtype))
        if source is not None:
            self._names[source] = node["id"]
        return Tensor(self, node["id"], None if shape is None else tuple(shape), dtype)

    # ---- documents ----

    def _outputs(self, outputs):
        for name, t in outputs.items():
            if name in _RESERVED:
                raise GraphError("bad-output-name", f"\"{name}\" names an option, not an output")
            self._check_own(t)
        return outputs

    def _reachable(self, roots):
        seen, stack = set(), [t.id for t in roots]
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            for key, value in self._nodes[i].items():
                if key not in ("id", "op") and self._is_port(self._nodes[i]["op"], key):
                    stack.append(value)
        return sorted(seen)

    @staticmethod
    def _is_port(op, key):
        return any(p["name"] == key for p in _ops.table()[op]["inputs"])

    def lowest_version(self, **outputs):
        """The lowest graph protocol version the nodes behind ``outputs`` need."""
        ids = self._reachable(self._outputs(outputs).values())
        return max((self._needs[i] for i in ids), default=1)

    def _document(self, outputs, inline=True, carries=None, tier=None, started=()):
        """The graph protocol document of the nodes ``outputs`` need. ``inline``: write the
        inputs' data (else they are fed). ``carries``: {input name: output name}. ``started``:
        inputs written as params whose value a session is given once, as bytes (a param's value
        replaces its initializer once, where an input without data is fed on every step)."""
        carries = carries or {}
        ids = self._reachable(list(outputs.values()))
        nodes = []
        for i in ids:
            node = dict(self._nodes[i])
            name = node.get("name")
            if node["op"] == "input" and name in started:
                node["op"] = "param"
                node["init"] = {"kind": "zeros"}
            elif node["op"] == "input" and name in self._arrays and inline:
                node["data"] = self._arrays[name].reshape(-1).tolist()
            if name in carries:
                node["carry"] = carries[name]
            nodes.append(node)
        needed = max((self._needs[i] for i in ids), default=1)
        doc = {"version": self.version if self.version is not None else needed}
        if self.name:
            doc["name"] = self.name
        if tier is not None:
            doc["determinism"] = tier
        doc["nodes"] = nodes
        doc["outputs"] = [{"name": n, "id": t.id} for n, t in outputs.items()]
        try:
            return json.dumps(doc, allow_nan=False)
        except ValueError:
            raise GraphError("non-finite-number",
                             "a value of the graph is NaN or infinite, which the graph protocol "
                             "(JSON) cannot hold",
                             help="feed non-finite values as arrays when the graph runs") from None

    def to_json(self, tier=None, **outputs):
        """The graph protocol document (JSON text) of ``outputs``, labelled with the lowest
        version it needs (or the version the Graph was given); inputs' data written inline."""
        return self._document(self._outputs(outputs), tier=tier)

    def _feeds(self, names, feeds):
        """The arrays for ``names`` (graph constants) with the caller's ``feeds`` on top."""
        out = {n: self._arrays[n] for n in names if n in self._arrays}
        out.update(self._feed_arrays(feeds))
        return out

    def _feed_arrays(self, feeds):
        out = {}
        for key, value in (feeds or {}).items():
            name = self.name_of(key)
            # The caller's memory as it is: no dtype conversion (a wrong dtype is the engine's
            # `bad-feed`); a copy only to make a strided view contiguous.
            out[name] = np.ascontiguousarray(value) if isinstance(value, np.ndarray) else value
        return out

    def name_of(self, t):
        """The name an input or param is fed, uploaded and downloaded by."""
        if isinstance(t, str):
            return t
        self._check_own(t)
        name = self._nodes[t.id].get("name")
        if self._nodes[t.id]["op"] not in ("input", "param") or name is None:
            raise GraphError("not-an-input", f"{t!r} is not a named input or param")
        return name

    def _engine_request(self, outputs, feeds):
        """(document without the inputs' data, feeds holding it): arrays travel as bytes."""
        outputs = self._outputs(outputs)
        text = self._document(outputs, inline=False)
        ids = self._reachable(outputs.values())
        names = [self._nodes[i]["name"] for i in ids if self._nodes[i]["op"] == "input"]
        return text, self._feeds(names, feeds)

    def run(self, backend="auto", tier=None, allow_software_adapter=False, threads=0, feeds=None,
            executor=None, **outputs):
        """Runs the graph once and returns a RunResult (backend, executor, fallback_reason,
        outputs as NumPy arrays, stats). ``backend``: "auto" (a hardware GPU, else the CPU
        reference, the fallback reason recorded), "webgpu", "cpu" or "null"; an explicit backend
        is never downgraded. ``tier``: "debug", "prod" or "fast"; the engine never assumes one.
        ``feeds``: {input or name: array} for inputs given by shape, or to replace data.
        ``executor``: pins one of the backend's executors ("fused-encoder" or "generic" on
        WebGPU; a pinned "generic" is reported as the fallback reason); None lets it choose."""
        text, arrays = self._engine_request(outputs, feeds)
        report = _scellis.run(text, backend, tier, allow_software_adapter, threads, arrays,
                              executor)
        return RunResult(**report)

    def submit(self, callback, on_error=None, backend="auto", tier=None,
               allow_software_adapter=False, threads=0, feeds=None, **outputs):
        """Runs the graph on the package's worker thread; ``callback(result)`` (or
        ``on_error(error)``) is called on that thread. The graph is recorded as plain data now, so
        later changes to it do not affect the run; ``feeds`` arrays are read when the run starts.
        Returns a concurrent.futures.Future, which also holds the error when there is no
        ``on_error``. After ``scellis.shutdown()`` no callback of an earlier submission is
        called."""
        text, arrays = self._engine_request(outputs, feeds)

        def job():
            report = _scellis.run(text, backend, tier, allow_software_adapter, threads, arrays)
            return RunResult(**report)

        return _worker.default().post(job, callback, on_error)

    def lower(self, rung="webir", tier=None, json=False, **outputs):
        """The engine's rung (doc, block, webir, kernel, execplan) of the graph, as printed by
        ``scellis lower --to=RUNG`` (or its JSON)."""
        return _scellis.lower(self.to_json(**outputs), rung, tier, json)

    def plan(self, tier=None, json=False, **outputs):
        """The engine's execution plan of the graph, as ``scellis plan`` prints it."""
        return self.lower("execplan", tier=tier, json=json, **outputs)

    def prepare(self, feeds=(), carry=None, resident=None, backend="auto", tier=None,
                allow_software_adapter=False, threads=0, **outputs):
        """A prepared Session: validated and planned once, state resident on the backend.

        ``feeds``: the inputs (tensors or names) given a value on every step;
        ``carry``: {input: tensor} — after each step the input takes the tensor's value (weights,
        optimizer moments), on the device;
        ``resident``: {name: tensor} kept on the device for ``download``, not read back per run;
        ``outputs``: read back after each run."""
        outputs = self._outputs(outputs)
        resident = self._outputs(dict(resident or {}))
        fed = {self.name_of(t) for t in feeds}
        carries, carried_outputs = {}, {}
        by_id = {t.id: n for n, t in list(outputs.items()) + list(resident.items())}
        for key, value in (carry or {}).items():
            name = self.name_of(key)
            self._check_own(value)
            out_name = by_id.get(value.id, f"{name}.next")
            carries[name] = out_name
            if out_name not in outputs and out_name not in resident:
                carried_outputs[out_name] = value
        everything = {**outputs, **resident, **carried_outputs}
        ids = self._reachable(everything.values())
        # Inputs with an array (graph constants, carried state) are handed to the session once,
        # as bytes; fed inputs are given on every step.
        started = {self._nodes[i]["name"] for i in ids if self._nodes[i]["op"] == "input"
                   and self._nodes[i]["name"] in self._arrays
                   and self._nodes[i]["name"] not in fed}
        text = self._document(everything, inline=False, carries=carries, started=started)
        initial = {n: self._arrays[n] for n in started}
        handle = _scellis.prepare(text, backend, tier, allow_software_adapter, threads, initial)
        return Session(self, handle, watch=list(outputs), fed=fed, carries=carries,
                       resident=list(resident))

    def matmul_fixed(self, a, b, frac_bits):
        """a @ b of i32 fixed-point values with ``frac_bits`` (0 to 31) fraction bits: the exact
        sum of products shifted right by frac_bits, rounded half to even, an i32 tensor with the
        same bits on every backend; a result outside i32 is ``fixed-point-overflow``."""
        for t in (a, b):
            self._check_own(t)
        shape = None if a.shape is None or b.shape is None else (a.shape[0], b.shape[1])
        return self._add("matmul_fixed", {"a": a, "b": b}, {"frac_bits": int(frac_bits)},
                         shape=shape, dtype="i32")
