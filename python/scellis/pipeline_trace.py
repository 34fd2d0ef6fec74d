"""The tracing side of a pipeline: the state of one trace, and ``scellis.loop`` (a loop
declared explicitly: its body traced once, whatever the count)."""

import numbers

import numpy as np

from .errors import GraphError, TraceError
from .tensor import Tensor


class _Trace:
    """The state of one trace: whether it has finished (its tensors are then stale) and the loop
    ``scellis.loop`` declared in it (the engine's form: start, length, count, carry)."""

    def __init__(self):
        self.done = False
        self.loop = None


def _is_static_count(count):
    return isinstance(count, numbers.Integral) and not isinstance(count, (bool, np.bool_))


def loop(count, body, *state):
    """``state = body(*state)``, ``count`` times; returns the final state (one tensor, or a
    tuple for several). Inside a pipeline the body is traced once and becomes the document's
    repeated graph (``count`` a static int, else ``loop-count-not-static``); outside one the
    body is simply called ``count`` times."""
    if not _is_static_count(count):
        raise TraceError("loop-count-not-static",
                         f"the loop count is {count!r}, not a static int: the document's repeat "
                         "is fixed when the pipeline is traced",
                         help="pass the count as a Python int (a constant argument of the "
                              "pipeline re-traces it when it changes)")
    count = int(count)
    if count < 0:
        raise GraphError("bad-loop-count", f"a loop runs at least zero times, got {count}")
    if not state:
        raise GraphError("bad-loop-state", "scellis.loop needs the loop state: loop(n, body, *state)")
    graph = next((t.graph for t in state if isinstance(t, Tensor)), None)
    trace = graph._trace if graph is not None else None
    if trace is None or count < 2:
        for _ in range(count):
            state = _as_state(body(*state), len(state))
        return state[0] if len(state) == 1 else tuple(state)
    for t in state:
        graph._check_own(t)
    if trace.loop is not None:
        raise TraceError("one-loop-per-pipeline",
                         "a pipeline holds one loop (its document has one repeat), and this "
                         "trace already has one",
                         help="write the loops as separate pipelines, or one loop with a larger "
                              "body")
    if len({t.id for t in state}) != len(state):
        raise TraceError("bad-loop-state", "the same tensor is passed twice as loop state",
                         help="pass each piece of state once")
    start = len(graph._nodes)
    out = _as_state(body(*state), len(state))
    for t in out:
        graph._check_own(t)
    carry = {}
    for before, after in zip(state, out):
        if after.id == before.id:
            continue  # handed back unchanged: invariant
        if after.id < start:
            raise TraceError("bad-loop-body",
                             f"the body returns {after!r}, a value from before the loop, as the "
                             f"next value of {before!r}",
                             help="return each piece of state in the order it was passed")
        carry[before.id] = after.id
    # The engine reads the body's reads of the carried nodes as its state (doc::TracedDocument).
    trace.loop = {"start": start, "length": len(graph._nodes) - start, "count": count,
                  "carry": [[before, after] for before, after in carry.items()]}
    return out[0] if len(out) == 1 else tuple(out)


def _as_state(value, n):
    value = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    if len(value) != n or not all(isinstance(t, Tensor) for t in value):
        raise TraceError("bad-loop-body",
                         f"the loop body returns {len(value)} values for {n} pieces of state",
                         help="return the next state as a tensor or a tuple, in the order given")
    return value
