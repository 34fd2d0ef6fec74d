"""Graph: a graph of tensor ops built with methods and operators (see scellis.tensor), serialised
to the engine's graph protocol (plain JSON data) and run, lowered, planned or prepared by the
engine (see scellis.graph_run). The optimizer steps (sgd, momentum, adam) are in
scellis.graph_optim.

The graph is plain data: every method adds one node of an op the engine's table has (an op it
lacks is an UnsupportedOpError, never an imitation). The engine checks each node as it is added
(_scellis.infer_node): it gives the node's shape and dtype and the lowest protocol version its form
needs, or refuses it with its diagnostic (pointing at the node's place in the document of the whole
graph) before the graph changes. Nothing here restates a shape or version rule: composite forms
(``2 / x``, a softmax over a leading axis) are built from the shapes the engine gave.
"""

import numpy as np

from . import _scellis
from . import ops as _ops
from .errors import GraphError, ScellisError, UnsupportedOpError
from .graph_optim import _GraphOptimizers
from .graph_run import _GraphRunning, _json_text
from .tensor import _DTYPES, Tensor, _dtype_name
from .tensor_values import _stale


class Graph(_GraphRunning, _GraphOptimizers):
    """A graph of tensor ops, built in Python and executed by the engine.

    ``version``: the graph protocol version to label the document with; None labels it with the
    lowest version its nodes need (so an older engine refuses it rather than misreading it).
    """

    def __init__(self, version=None, name=None):
        self.version = version
        self.name = name
        self._nodes = []      # graph-protocol node objects, index = id
        self._needs = []      # per node: the lowest protocol version it needs (the engine's)
        self._types = []      # per node: (shape, dtype), the engine's (a source's: declared)
        self._arrays = {}     # input name -> its value (a graph constant, snapshotted)
        self._names = {}      # input/param name -> node id
        self._trace = None    # the pipeline trace this graph records, if any (scellis.pipeline)
        self._user_ops = {}   # name -> UserOp (scellis.define_op) its nodes use

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
            return self._add_source("input", {"name": name, "shape": list(shape), "dtype": dtype},
                                    shape, dtype, name)
        array = np.array(value, dtype=_DTYPES[dtype], copy=True, order="C")
        node = self._add_source("input",
                                {"name": name, "shape": list(array.shape), "dtype": dtype},
                                array.shape, dtype, name)
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
        return self._add_source("param", {"name": name, "shape": list(shape), "init": spec},
                                shape, "f32", name)

    def full(self, shape, value):
        """A tensor of ``shape`` filled with ``value``."""
        shape = tuple(int(s) for s in shape)
        return self._add_source("full", {"shape": list(shape), "value": float(value)}, shape,
                                "f32")

    # ---- ops ----

    def arange(self, shape, axis=0, dtype="i32"):
        """A tensor of ``shape`` whose every element is its index along ``axis`` (i32, u32 or
        f32; protocol version 6): torch.arange broadcast along the other axes, computed in the
        kernel that reads it."""
        shape = [int(s) for s in shape]
        return self._add("arange", {}, {"shape": shape, "axis": int(axis), "dtype": dtype})

    def where(self, condition, a, b):
        """``a`` where ``condition`` (a bool mask) is true, else ``b``; a number for ``a`` or
        ``b`` is a rank-0 constant. The three broadcast together (protocol version 3)."""
        # A number becomes a `full` node first; if the engine refuses the `where`, those go too,
        # so a refused node leaves the graph as it was.
        count = len(self._nodes)
        try:
            a, b = (x if isinstance(x, Tensor) else self.full((), x) for x in (a, b))
            return self._add("where", {"cond": condition, "a": a, "b": b})
        except ScellisError:
            del self._nodes[count:], self._needs[count:], self._types[count:]
            raise

    def op(self, op, **ports_and_attrs):
        """Adds a node of any op in the engine's table: Tensor keyword arguments are its ports
        (a list or tuple of Tensors for a list port, such as concat's ``inputs``), the rest its
        attributes."""
        spec = _ops.table().get(op)
        list_ports = {p["name"] for p in spec["inputs"] if p.get("list")} if spec else set()
        ports, attrs = {}, {}
        for key, value in ports_and_attrs.items():
            if key in list_ports and isinstance(value, (list, tuple)):
                ports[key] = list(value)
            elif isinstance(value, Tensor):
                ports[key] = value
            else:
                attrs[key] = value
        return self._add(op, ports, attrs)

    def concat(self, tensors, axis=0):
        """The ``tensors`` (one dtype and rank, equal sizes but along ``axis``) joined along
        ``axis`` in list order, as torch.cat (protocol version 4)."""
        return self._add("concat", {"inputs": list(tensors)}, {"axis": int(axis)})

    def stack(self, tensors, axis=0):
        """The ``tensors`` (one dtype and shape) joined along a new axis inserted at ``axis``
        (in [-rank - 1, rank]), in list order, as torch.stack (protocol version 4)."""
        return self._add("stack", {"inputs": list(tensors)}, {"axis": int(axis)})

    def matmul_fixed(self, a, b, frac_bits):
        """a @ b of i32 fixed-point values with ``frac_bits`` (0 to 31) fraction bits: the exact
        sum of products shifted right by frac_bits, rounded half to even, an i32 tensor with the
        same bits on every backend; a result outside i32 is ``fixed-point-overflow``."""
        return self._add("matmul_fixed", {"a": a, "b": b}, {"frac_bits": int(frac_bits)})

    # ---- nodes ----

    def _add_source(self, op, attrs, shape, dtype, name=None):
        """An input, param or full node, of the shape and dtype it declares (the engine checks the
        declaration when it reads the document)."""
        self._check_live(None)
        return self._append({"id": len(self._nodes), "op": op, **attrs}, tuple(shape), dtype,
                            _ops.table()[op]["min_version"], name)

    def _add(self, op, ports, attrs=None):
        """A node of ``op`` reading ``ports`` ({port: Tensor of this graph, or a list of them for
        a list port; an empty list is the engine's to name}) with ``attrs``, typed by the engine
        (_scellis.infer_node); a node it refuses raises its diagnostic and leaves the graph as it
        was."""
        for t in ports.values():
            for entry in t if isinstance(t, list) else [t]:
                self._check_own(entry)  # of this graph, whose trace (if any) is live
        self._check_live(None)          # a node without inputs
        if self._spec(op) is None:
            raise UnsupportedOpError(
                "unknown-op", f"the engine's op table has no op \"{op}\"",
                help="ops this build has: " + ", ".join(_ops.names()))
        fields = {"id": len(self._nodes), "op": op, **(attrs or {})}
        inputs = {port: [self._types[e.id] for e in t] if isinstance(t, list)
                  else self._types[t.id] for port, t in ports.items()}
        user = [self._user_ops[op]._handle] if op in self._user_ops else []
        (shape, dtype), version = _scellis.infer_node(_json_text(fields), inputs,
                                                      f"/nodes/{fields['id']}", user)
        # A list port (concat's `inputs`) holds an array of node ids, in list order.
        node = {"id": fields["id"], "op": op}
        node.update({port: [e.id for e in t] if isinstance(t, list) else t.id
                     for port, t in ports.items()})
        node.update(attrs or {})
        return self._append(node, shape, dtype, version)

    def _check_live(self, t):
        """Refuses adding to the graph of a finished trace (``t``: a tensor it is about)."""
        if self._trace is not None and self._trace.done:
            raise _stale(t)

    def _append(self, node, shape, dtype, version, name=None):
        self._nodes.append(node)
        self._needs.append(version)
        self._types.append((shape, dtype))
        if name is not None:
            self._names[name] = node["id"]
        return Tensor(self, node["id"], shape, dtype)

    def _spec(self, op):
        """The op's entry: a user op's this graph uses, else the engine table's (None: neither)."""
        user = self._user_ops.get(op)
        return user.spec if user is not None else _ops.table().get(op)

    def _add_user_op(self, op, ports):
        """A node of the user op ``op`` (scellis.define_op) on ``ports`` ({port: Tensor})."""
        for t in ports.values():
            self._check_own(t)
        known = self._user_ops.get(op.name)
        if known is not None and known is not op:
            raise GraphError("op-name-taken",
                             f"the graph already uses another op named \"{op.name}\"")
        if known is None and _ops.table().get(op.name) is not None:
            raise GraphError("op-name-taken", f"\"{op.name}\" is a built-in op")
        self._user_ops[op.name] = op
        try:
            return self._add(op.name, ports)   # typed by the engine's rule for user ops
        except ScellisError:
            if known is None:
                del self._user_ops[op.name]
            raise
