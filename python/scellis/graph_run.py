"""The running side of a Graph: the graph protocol document of the nodes some outputs need, and
what the engine does with it (run, submit, lower, plan, prepare), with the feeds the inputs take.

Graph (scellis.graph) builds the nodes; this mixin reads them and never adds one.
"""

import json

import numpy as np

from . import _scellis
from . import user_ops as _user_ops
from .errors import GraphError, UserReferenceError
from .result import RunResult
from .session import Session
from . import worker as _worker


# Keyword arguments of run/submit/prepare/lower/plan that are options, not output names.
_RESERVED = ("backend", "tier", "allow_software_adapter", "threads", "feeds", "carry",
             "resident", "callback", "on_error", "rung", "json", "executor", "record")


class _GraphRunning:
    """Documents, feeds and the engine's entry points of a Graph (whose building API and node
    lists are scellis.graph's)."""

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
                    stack.extend(value if isinstance(value, list) else [value])
        return sorted(seen)

    def _is_port(self, op, key):
        return any(p["name"] == key for p in self._spec(op)["inputs"])

    def _run_engine(self, text, backend, tier, allow_software_adapter, threads, arrays,
                    executor=None, record=True):
        """_scellis.run with the user ops the graph uses; a failing reference's exception is
        chained to the UserReferenceError it becomes."""
        ops = list(self._user_ops.values())
        try:
            return _scellis.run(text, backend, tier, allow_software_adapter, threads, arrays,
                                executor, _user_ops.handles(ops), record)
        except UserReferenceError as e:
            _user_ops.reraise_from_reference(e, ops)

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
        return _json_text(doc)

    def to_json(self, tier=None, **outputs):
        """The graph protocol document (JSON text) of ``outputs``, labelled with the lowest
        version it needs (or the version the Graph was given); inputs' data written inline."""
        return self._document(self._outputs(outputs), tier=tier)

    # ---- feeds and runs ----

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
            executor=None, record=True, **outputs):
        """Runs the graph once and returns a RunResult (backend, executor, fallback_reason,
        outputs as NumPy arrays, stats). ``backend``: "auto" (a hardware GPU, else the CPU
        reference, the fallback reason recorded), "webgpu", "cpu" or "null"; an explicit backend
        is never downgraded. ``tier``: "debug", "prod" or "fast"; the engine never assumes one.
        ``feeds``: {input or name: array} for inputs given by shape, or to replace data.
        ``executor``: pins one of the backend's executors ("fused-encoder" or "generic" on
        WebGPU; a pinned "generic" is reported as the fallback reason); None lets it choose.
        ``record``: leave a run record in the store as ``scellis run`` does (its id is the
        result's ``run_id``; also off with SCELLIS_NO_RECORD=1); see scellis.runs/replay."""
        text, arrays = self._engine_request(outputs, feeds)
        report = self._run_engine(text, backend, tier, allow_software_adapter, threads, arrays,
                                  executor, record)
        return RunResult(**report)

    def submit(self, callback, on_error=None, backend="auto", tier=None,
               allow_software_adapter=False, threads=0, feeds=None, record=True, **outputs):
        """Runs the graph on the package's worker thread; ``callback(result)`` (or
        ``on_error(error)``) is called on that thread. The graph is recorded as plain data now, so
        later changes to it do not affect the run; ``feeds`` arrays are read when the run starts.
        Returns a concurrent.futures.Future, which also holds the error when there is no
        ``on_error``. After ``scellis.shutdown()`` no callback of an earlier submission is
        called."""
        text, arrays = self._engine_request(outputs, feeds)

        def job():
            report = self._run_engine(text, backend, tier, allow_software_adapter, threads, arrays,
                                      record=record)
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
                allow_software_adapter=False, threads=0, record=False, **outputs):
        """A prepared Session: validated and planned once, state resident on the backend.

        ``feeds``: the inputs (tensors or names) given a value on every step;
        ``carry``: {input: tensor} — after each step the input takes the tensor's value (weights,
        optimizer moments), on the device;
        ``resident``: {name: tensor} kept on the device for ``download``, not read back per run;
        ``outputs``: read back after each run;
        ``record``: keep a run record of the session's runs (see scellis.session)."""
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
        handle = _scellis.prepare(text, backend, tier, allow_software_adapter, threads, initial,
                                  None, _user_ops.handles(self._user_ops.values()), record)
        return Session(self, handle, watch=list(outputs), fed=fed, carries=carries,
                       resident=list(resident))



def _json_text(data):
    try:
        return json.dumps(data, allow_nan=False)
    except ValueError:
        raise GraphError("non-finite-number",
                         "a value of the graph is NaN or infinite, which the graph protocol "
                         "(JSON) cannot hold",
                         help="feed non-finite values as arrays when the graph runs") from None
