"""User ops defined from Python (docs/user_ops.md): the signature and WGSL a document's "ops"
section holds, with the reference a Python function over NumPy arrays in place of a graph of
built-in ops. The CPU reference runs the function in the op's place; ``scellis.conform`` proves the
WGSL against it on a GPU and mints a receipt for the device.

    def jacobi(u):
        p = np.pad(u.astype(np.float64), 1)
        return 0.25 * (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:])

    stencil = scellis.define_op("stencil", inputs=[{"name": "u", "rank": 2}], shape="u",
                                tolerance="tight", wgsl=WGSL, reference=jacobi)
    g = scellis.Graph()
    out = stencil(g.input("u", grid))
    g.run(tier="prod", backend="cpu", out=out)
    scellis.conform([stencil], tier="prod")["ok"]

A callable has no content to hash: a receipt keys on the signature, the WGSL and ``version``,
which the function's author changes when its results change.

``gradient={"x": {"wgsl": ..., "reference": fn, "version": "1"}}`` gives the op's gradient per
port: ``fn`` takes the inputs and then the upstream gradient and returns the gradient for the port.
Autodiff (a training workflow, ``prepare_workflow(..., ops=[op])``) emits it; conformance proves its
WGSL against ``fn`` and grad-checks ``fn`` against central differences of the forward, both called
with float64 arrays then (NumPy code is dtype-generic) and required to return float64.
"""
import json

import numpy as np

from . import _scellis
from .errors import GraphError, UserReferenceError

# The graph protocol version that introduced user ops.
USER_OPS_VERSION = 6


class UserOp:
    """An op defined with ``define_op``. Calling it with tensors of one graph (positionally in
    port order, or by port name) adds its node there."""

    def __init__(self, name, inputs, shape, wgsl, reference, tolerance, dtype, version, gradient):
        ports = [{"name": p} if isinstance(p, str) else dict(p) for p in inputs]
        self.name = name
        self.ports = [p.get("name") for p in ports]
        self.shape = shape
        self.reference = reference
        self.version = version
        signature = {"inputs": ports, "shape": shape, "dtype": dtype, "wgsl": wgsl}
        if tolerance is not None:
            signature["tolerance"] = tolerance
        self.signature = signature
        # What the graph builder reads of an op (as of a built-in's entry in ops.table()).
        self.spec = {"name": name, "min_version": USER_OPS_VERSION, "family": "user",
                     "inputs": [{"name": p} for p in self.ports], "attrs": []}
        self._errors = []
        gradients = []
        for port, g in (gradient or {}).items():
            if not isinstance(g, dict) or not {"wgsl", "reference"} <= g.keys() or \
                    not g.keys() <= {"wgsl", "reference", "version"}:
                raise GraphError("bad-gradient",
                                 f"the gradient of \"{name}\" for \"{port}\" is not "
                                 "{\"wgsl\", \"reference\", \"version\"}",
                                 help="gradient={\"<input>\": {\"wgsl\": ..., \"reference\": fn, "
                                      "\"version\": \"1\"}}")
            fn = g["reference"]
            gradients.append((port, g["wgsl"], self._call(fn, np.float32),
                              self._call(fn, np.float64), str(g.get("version", "1"))))
        self._handle = _scellis.define_op(name, json.dumps(signature),
                                          self._call(reference, np.float32),
                                          self._call(reference, np.float64), str(version),
                                          gradients)

    def _call(self, reference, dtype):
        """``reference`` as the engine calls it: a list of arrays in, an array of ``dtype`` out
        (float64 for the gradient check, which a float32 result would blur: refused)."""
        name, errors = self.name, self._errors

        def call(arrays):
            # Kept to chain to the typed error the engine's `user-reference-failed` becomes.
            try:
                out = reference(*arrays)
                if out is None:
                    raise TypeError(f"the reference of \"{name}\" returned None, not an array")
                if dtype == np.float64 and np.asarray(out).dtype != np.float64:
                    raise TypeError(f"the reference of \"{name}\" returned "
                                    f"{np.asarray(out).dtype} for float64 inputs; the gradient "
                                    "check needs float64 (compute in the inputs' dtype)")
            except BaseException as e:
                errors[:] = [e]
                raise
            return np.ascontiguousarray(out, dtype=dtype)

        return call

    def __repr__(self):
        return f"UserOp({self.name!r}, inputs={self.ports}, shape={self.shape!r})"

    def __call__(self, *tensors, **ports):
        if len(tensors) > len(self.ports):
            raise GraphError("bad-user-op-inputs",
                             f"\"{self.name}\" takes {len(self.ports)} inputs, "
                             f"given {len(tensors)}")
        given = dict(zip(self.ports, tensors))
        for port, t in ports.items():
            if port not in self.ports or port in given:
                raise GraphError("bad-port-name",
                                 f"\"{port}\" is {'given twice' if port in given else 'no port'}"
                                 f" of \"{self.name}\"", help="ports: " + ", ".join(self.ports))
            given[port] = t
        missing = [p for p in self.ports if p not in given]
        if missing:
            raise GraphError("missing-input",
                             f"\"{self.name}\" is given no {', '.join(missing)}")
        graph = given[self.ports[0]].graph
        return graph._add_user_op(self, given)

    def take_error(self):
        """The exception the reference last raised, once (or None)."""
        e = self._errors[0] if self._errors else None
        self._errors.clear()
        return e


def define_op(name, inputs, shape, wgsl, reference, tolerance=None, dtype="f32", version="1",
              gradient=None):
    """A user op: ``inputs`` its ports in order (names, or {"name", "rank"} objects), ``shape``
    the port whose shape the output takes, ``tolerance`` its class ("exact", "tight", "default"
    when None, "loose"), ``wgsl`` its kernel (``fn NAME(index: u32) -> f32``, docs/user_ops.md),
    ``reference`` a function taking the inputs as float32 NumPy arrays in port order and returning
    the output (converted to float32), ``version`` what receipts name the function by,
    ``gradient`` per port {"wgsl", "reference", "version"}: the gradient's WGSL
    (``fn NAME_grad_PORT``) and a function of the inputs and the upstream gradient (the
    grad-check calls the functions with float64 arrays and wants float64 back). A wrong
    definition raises GraphError with the engine's code (``op-name-taken``, ``bad-port-name``...);
    an exception in ``reference`` while the op runs raises UserReferenceError from it."""
    return UserOp(name, inputs, shape, wgsl, reference, tolerance, dtype, version, gradient)


def handles(ops):
    """The engine's handles of ``ops``, for a run or conformance call."""
    return [op._handle for op in ops]


def reraise_from_reference(error, ops):
    """``error`` chained to the exception the failing op's reference raised, when one did."""
    if isinstance(error, UserReferenceError):
        parts = error.pointer.split("/")
        for op in ops:
            if len(parts) > 2 and parts[2] == op.name:
                cause = op.take_error()
                if cause is not None:
                    raise error from cause
    raise error


def conform(ops, tier, names=None, backend="webgpu", allow_software_adapter=False, seed=None,
            store=""):
    """Proves the WGSL of ``ops`` (UserOps) against their references on the GPU (``scellis
    conform``'s cases, from each signature): the report's JSON form, {"ok", "seed", "profile",
    "ops": [{"op", "cases", "passed", "receipt", "failures": [{"case", "message"}]}]}.
    ``names``: only these ops (default: all). A passing op's receipt goes into the store (``store``,
    "" for the default one). Without a WebGPU device it raises ``no-gpu``."""
    ops = list(ops)
    try:
        return _scellis.conform(handles(ops), list(names or []), tier, backend,
                                allow_software_adapter, seed, store)
    except UserReferenceError as e:
        reraise_from_reference(e, ops)
