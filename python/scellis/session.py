"""Prepared sessions (api::Session): a graph validated and planned once, its carried state
(weights, optimizer moments) resident on the backend between steps. ``run`` executes one step,
``run_steps`` up to 64 in one submission; only the watched outputs come back. ``start`` and
``finish`` split a run so that two are in flight: the next run is fed and recorded while the device
runs the one before, with the values and state of runs one at a time.

``prepare_workflow`` prepares a ``scellis.workflow/1`` document as it is (a training workflow
included: the engine differentiates its forward and appends the optimizer); its inputs are fed
and its state read by name.

A session prepared with ``record=True`` keeps a run record of its runs — the document, the initial
values, every step's feeds and the watched outputs after it — stored by ``record()`` and by
``dispose``; ``scellis.replay(session.run_id)`` prepares it again and re-runs every step, bit for
bit on the CPU reference and in debug. Recording is off by default: digesting every fed batch
costs more than a small step.

A run that fails after device work began poisons the session: run, download and upload then
raise SessionStateError (``session-poisoned``) and only ``dispose`` remains. Bad feeds are
refused before any work and leave the session usable, and so is a run whose staged feeds and
watched values (more steps at once, or outputs the session's plan did not watch) the device's
budget or the host cannot hold: GraphError ``memory-over-budget`` (or ``-device``, ``-host``).
After ``dispose`` every call raises SessionStateError (``session-disposed``).
"""

import json

import numpy as np

from . import _scellis
from . import user_ops as _user_ops
from .errors import ScellisError


def prepare_workflow(document, backend="auto", tier=None, allow_software_adapter=False,
                     initial=None, watch=("loss",), threads=0, ops=(), record=False):
    """A prepared Session of a workflow document (a dict or its JSON text). ``initial``: {name:
    array} replacing params' initializers or carried inputs before the first step; ``watch``: the
    outputs read back after each run. A training workflow's step input "step" is fed by the
    caller with the other inputs, 1-based, as the trainer feeds it. ``ops``: user ops
    (``scellis.define_op``) the document uses by name; a training workflow differentiates through
    their gradients. ``record``: keep a run record of the session's runs (module docstring)."""
    text = document if isinstance(document, str) else json.dumps(document)
    initial = {k: np.ascontiguousarray(v) for k, v in (initial or {}).items()}
    handle = _scellis.prepare(text, backend, tier, allow_software_adapter, threads, initial, None,
                              _user_ops.handles(ops), record)
    return Session(None, handle, watch=watch, fed=(), carries={}, resident=())


class Session:
    def __init__(self, graph, handle, watch, fed, carries, resident):
        self._graph = graph
        self._handle = handle
        self.watch = list(watch)          # outputs read back after each run
        self.fed = set(fed)               # inputs fed on every step
        self.carries = dict(carries)      # input name -> the output it takes after each step
        self.resident = list(resident)    # outputs kept for download
        self.stats = {}                   # the engine's stats of the last run
        self.run_id = None                # the id of the session's latest stored record
        self._unrecorded_runs = 0

    # What ran and where.
    backend = property(lambda self: self._handle.backend)
    executor = property(lambda self: self._handle.executor)
    fallback_reason = property(lambda self: self._handle.fallback_reason)
    attempts = property(lambda self: self._handle.attempts)
    poisoned = property(lambda self: self._handle.poisoned)
    content_id = property(lambda self: self._handle.content_id)
    determinism_tier = property(lambda self: self._handle.determinism_tier)

    def __repr__(self):
        return (f"Session(backend={self.backend!r}, executor={self.executor!r}, "
                f"watch={self.watch}, carries={self.carries})")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.dispose()

    def run(self, feeds=None):
        """One step; returns {output: array} of the watched outputs after it."""
        watched = self._run([feeds or {}])
        return {name: values[0] for name, values in watched.items()}

    def run_steps(self, steps):
        """``steps`` (a list of per-step feeds dicts, or a step count when nothing is fed) run in
        one submission (at most 64); returns {output: array of shape [steps, ...]}."""
        if isinstance(steps, int):
            steps = [{}] * steps
        watched = self._run(list(steps))
        return {name: np.stack(values) for name, values in watched.items()}

    def start(self, steps):
        """Starts a run of ``steps`` (as ``run_steps`` takes them) and returns before the device
        has run it, so the next run's feeds are made and recorded while this one runs. At most two
        runs are in flight (a third start raises SessionStateError ``too-many-runs-in-flight``;
        ``run``, ``download`` and ``upload`` raise ``runs-in-flight`` until they are finished).
        Runs execute in the order they were started."""
        if isinstance(steps, int):
            steps = [{}] * steps
        self._handle.start(self._feeds(list(steps)), self.watch)

    def finish(self):
        """Waits for the oldest started run; returns what ``run_steps`` would have returned for it
        ({output: array of shape [steps, ...]})."""
        watched, self.stats = self._handle.finish()
        self._unrecorded_runs += 1
        return {name: np.stack(values) for name, values in watched.items()}

    runs_in_flight = property(lambda self: self._handle.runs_in_flight)

    def _feeds(self, steps):
        if self._graph is None:  # a workflow's session: fed by name
            return [{k: np.ascontiguousarray(v) if isinstance(v, np.ndarray) else v
                     for k, v in step.items()} for step in steps]
        return [self._graph._feed_arrays(step) for step in steps]

    def _run(self, steps):
        watched, self.stats = self._handle.run(self._feeds(steps), self.watch)
        self._unrecorded_runs += 1
        return watched

    def record(self):
        """Stores the record of the runs so far (a session prepared with ``record=True``) and
        returns its run id, else None."""
        self.run_id = self._handle.record()
        self._unrecorded_runs = 0
        return self.run_id

    def download(self, name):
        """The current value of an output, a resident tensor or an input (a tensor or a name)."""
        return self._handle.download(self._name(name))

    def upload(self, name, value):
        """Replaces the value of a param or carried input (restoring a checkpoint, say); the
        value's dtype and shape must be the input's."""
        value = np.ascontiguousarray(value) if isinstance(value, np.ndarray) else value
        self._handle.upload(self._name(name), value)

    def dispose(self):
        """Frees the resident state (a recording session stores its record first, see
        ``run_id``); every later call raises SessionStateError. Runs still in flight are waited
        for first (their values dropped, a recording session's runs recorded)."""
        while self.runs_in_flight:
            try:
                self.finish()
            except ScellisError:
                break  # it failed and poisoned the session: disposing drops the rest
        if self._handle.recording and self._unrecorded_runs:
            self.record()
        self._handle.dispose()

    def _name(self, key):
        if isinstance(key, str) or self._graph is None:
            return key
        return self._graph.name_of(key)
