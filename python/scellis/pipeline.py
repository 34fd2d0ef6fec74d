"""Pipelines: a Python function of tensor ops, traced once into a graph protocol document whose
graph is one loop body run ``repeat`` times, its loop state carried between iterations (graph
protocol version 5), then run from a prepared session on every call.

    @scellis.pipeline
    def jacobi(u, q):
        for _ in range(512):
            u = (u.shift([1, 0]) + u.shift([-1, 0]) + u.shift([0, 1]) + u.shift([0, -1]) + q) * 0.25
        return u

    u = jacobi(u0, q)          # NumPy arrays in, NumPy arrays out

How a loop becomes one body. The function is called once with symbolic tensors (one per array
argument, of its shape and dtype), so an ordinary ``for _ in range(512)`` runs 512 times during
the trace and records 512 copies of the body. The trace is then rolled up: the longest stretch of
nodes that is the same body repeated, each copy reading the previous copy's values where the
first read the loop's starting values, becomes the document's graph with ``repeat`` set to the
number of copies; what the first copy read from before the loop and the copies after it read from
their predecessor is the carried state. The roll-up is exact (every copy is checked node by node
and port by port against the first), so the document computes what the unrolled trace computes;
a trace with no such stretch runs as it is, once. ``scellis.loop(n, body, *state)`` says the same
thing explicitly: ``body`` is traced once, whatever ``n`` is (for very long loops, where tracing
every copy costs time), and ``n`` must be a static int.

What a pipeline can hold: one loop (the document has one ``repeat``); nodes before it over the
arguments (recomputed every iteration, since the document's graph is the body), and nodes after
it over the loop's final values (computed every iteration too; only the last iteration's value is
returned). The loop's starting state is an argument, or a value computed before the loop (an
accumulator started at zero, a scaled copy): such values are computed by a prologue document of
their own on each call (one more submission) and uploaded as the carried state.

Calls. Array arguments are symbolic; every other argument (a number, a string, a tuple) is a
constant of the trace. The function is traced again only when an array's shape or dtype or a
constant changes: the documents and prepared sessions are kept per signature. A call uploads the
loop state and the other arrays, runs one step (``repeat`` iterations; one submission on WebGPU)
and returns NumPy arrays of its own (they stay valid after the next call); ``run`` returns the
RunResult with backend, executor, fallback_reason and the engine's stats.

Tracing rules, named build-time errors (TraceError, a GraphError): reading a value inside the
function (``float(t)``, ``t.numpy()``: ``value-read-in-trace``), branching on one (``bool(t)``,
``if t``: ``data-dependent-control-flow``), using a tensor kept from an earlier trace
(``stale-handle``), a loop count that is not a static int (``loop-count-not-static``).

The tracing (``_Trace``, ``scellis.loop``) is in pipeline_trace, the document a trace becomes
in pipeline_document, the calls that run it (prepared sessions, the prologue) in pipeline_run.
"""

import functools
import inspect
import threading

import numpy as np

from .errors import GraphError, TraceError
from .graph import Graph
from .pipeline_document import _traced_document
from .pipeline_run import _PipelineRunning
from .pipeline_trace import _Trace, loop  # noqa: F401 (loop: importable from here as before)
from .tensor import Tensor, _dtype_name


class Pipeline(_PipelineRunning):
    """A traced pipeline; see the module's documentation. Calling it runs it and returns NumPy
    arrays shaped as the function's result; ``run`` returns the RunResult (scellis.pipeline_run).
    """

    def __init__(self, fn, backend="auto", tier=None, allow_software_adapter=False, threads=0,
                 executor=None, record=True):
        functools.update_wrapper(self, fn)
        self._fn = fn
        self._signature = inspect.signature(fn)
        self._options = dict(backend=backend, tier=tier,
                             allow_software_adapter=allow_software_adapter, threads=threads)
        self._executor = executor
        self._record = record
        self._traced = {}    # signature -> _Traced
        self._sessions = {}  # signature -> the engine's prepared session
        self._lock = threading.Lock()
        self.traces = 0      # how many times the function has been traced

    def __repr__(self):
        return f"<scellis.pipeline {self._fn.__qualname__}, {self.traces} traces>"

    # ---- tracing ----

    def _bind(self, args, kwargs):
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        arrays, key = {}, []
        for name, value in bound.arguments.items():
            if isinstance(value, Tensor):
                raise TraceError("stale-handle" if value.graph._trace else "foreign-tensor",
                                 f"the argument {name!r} is a Tensor; a pipeline takes arrays",
                                 help="pass NumPy arrays (the pipeline's results are arrays)")
            if isinstance(value, np.ndarray):
                array = np.ascontiguousarray(value)
                key.append((name, "array", array.shape, _dtype_name(array.dtype)))
                arrays[name] = array
            else:
                try:
                    hash(value)
                except TypeError:
                    raise GraphError("bad-pipeline-argument",
                                     f"the argument {name!r} is neither an array nor a hashable "
                                     f"constant ({type(value).__name__})",
                                     help="pass arrays as NumPy arrays, constants as numbers, "
                                          "strings or tuples") from None
                key.append((name, "constant", type(value).__name__, value))
        return bound, arrays, tuple(key)

    def _trace(self, bound, arrays):
        graph = Graph(name=self._fn.__name__)
        graph._trace = trace = _Trace()
        symbolic = dict(bound.arguments)
        for name, array in arrays.items():
            symbolic[name] = graph.input(name, tuple(array.shape), dtype=array.dtype)
        call = inspect.BoundArguments(self._signature, symbolic)
        try:
            result = self._fn(*call.args, **call.kwargs)
        finally:
            trace.done = True  # whatever the function kept of the trace is stale from now on
        if isinstance(result, dict):
            structure, returned = ("dict", tuple(result)), {str(k): v for k, v in result.items()}
        elif isinstance(result, (tuple, list)):
            structure = "tuple" if isinstance(result, tuple) else "list"
            returned = {f"out{k}": v for k, v in enumerate(result)}
        else:
            structure, returned = "single", {"out": result}
        for name, t in returned.items():
            if not isinstance(t, Tensor) or t.graph is not graph:
                raise TraceError("bad-pipeline-output",
                                 f"the pipeline returns {t!r} as {name!r}, not a tensor of its "
                                 "trace",
                                 help="return tensors computed from the pipeline's arguments")
        if not returned:
            raise TraceError("bad-pipeline-output", "the pipeline returns nothing")
        traced = _traced_document(graph, arrays, returned, trace.loop, self._fn.__name__,
                                  structure)
        self.traces += 1
        # The user ops (scellis.define_op) the function called: every engine call is given them.
        traced.user_ops = list(graph._user_ops.values())
        return traced

    def trace(self, *args, **kwargs):
        """The traced document for these arguments (traced now unless cached): ``.doc`` (the
        graph protocol document as data), ``.text``, ``.repeat``."""
        with self._lock:
            return self._traced_for(*self._bind(args, kwargs))

    def _traced_for(self, bound, arrays, key):
        traced = self._traced.get(key)
        if traced is None:
            traced = self._traced[key] = self._trace(bound, arrays)
        return traced


def pipeline(fn=None, *, backend="auto", tier=None, allow_software_adapter=False, threads=0,
             executor=None, record=True):
    """Decorator: ``@scellis.pipeline`` or ``@scellis.pipeline(backend="webgpu", ...)``. The
    options are those of Graph.run; ``executor`` pins "fused-encoder" or "generic" on WebGPU
    (a pinned run compiles per call, through the one-shot path). ``record``: a one-shot run
    leaves a run record, as Graph.run does; a call stepping the prepared session leaves none,
    as a session's steps do not."""
    def wrap(f):
        return Pipeline(f, backend=backend, tier=tier,
                        allow_software_adapter=allow_software_adapter, threads=threads,
                        executor=executor, record=record)
    return wrap if fn is None else wrap(fn)
