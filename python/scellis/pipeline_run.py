"""The running side of a Pipeline: a call of a traced signature uploads the loop state and the
other arrays to the signature's prepared session and runs one step (``repeat`` iterations), the
loop's computed starting values first from a prologue session of their own. A session that
fails (a device or session-state error) is dropped; when it refused a non-finite value, the call
runs once more as a one-shot run (a pipeline returns such a value, as a run does).

Pipeline (scellis.pipeline) binds the arguments and traces the function; this mixin takes what a
trace gave (a _Traced, scellis.pipeline_document) and never traces.
"""

from . import _scellis
from . import user_ops as _user_ops
from .errors import DeviceError, SessionStateError, UserReferenceError
from .result import RunResult


class _PipelineRunning:
    """The calls, runs and prepared sessions of a Pipeline (whose binding and tracing are
    scellis.pipeline's)."""

    def run(self, *args, **kwargs):
        """Runs the pipeline and returns the RunResult: ``outputs`` by name (``out``, ``out0``
        ..., or the returned dict's keys), ``backend``, ``executor``, ``fallback_reason`` and the
        engine's ``stats``."""
        with self._lock:
            bound, arrays, key = self._bind(args, kwargs)
            traced = self._traced_for(bound, arrays, key)
            try:
                return self._run_traced(traced, arrays, key)
            except UserReferenceError as e:
                # Chained to the exception the user op's reference raised, as a Graph run is.
                _user_ops.reraise_from_reference(e, traced.user_ops)

    def _run_traced(self, traced, arrays, key):
        """One call of a traced signature: the prologue, then a step of its prepared session."""
        fed = {n: arrays[arg] for n, arg in traced.fed.items()}
        if traced.prologue is not None:
            arrays = {**arrays, **self._prologue(traced, arrays, key)}
        state = {n: arrays[arg] for n, arg in traced.state.items()}
        session = self._sessions.get(key)
        try:
            if session is None:
                o = self._options
                session = _scellis.prepare(traced.text, o["backend"], o["tier"],
                                           o["allow_software_adapter"], o["threads"], state,
                                           self._executor,
                                           _user_ops.handles(traced.user_ops))
                self._sessions[key] = session
            else:
                for n, value in state.items():
                    session.upload(n, value)
            watched, stats = session.run([fed], traced.outputs)
        except (DeviceError, SessionStateError) as e:
            # Every call starts from the state it is given, so a session poisoned by this
            # call is replaced on the next one rather than kept.
            dropped = self._sessions.pop(key, None)
            if dropped is not None:
                dropped.dispose()
            if getattr(e, "code", None) != "non-finite-readback":
                raise
            # A session refuses a non-finite carried value as a divergence; for a pipeline
            # it is a result (as a one-shot run returns it), so the call runs once more so.
            return self._run_once(traced, {**fed, **state}, self._executor)
        return RunResult(backend=session.backend, executor=session.executor,
                         fallback_reason=session.fallback_reason,
                         outputs={n: watched[n][0] for n in traced.outputs}, stats=stats,
                         attempts=session.attempts,
                         determinism_tier=session.determinism_tier,
                         content_id=session.content_id)

    def _prologue(self, traced, arrays, key):
        """The loop's starting values computed before it (a session of their own, one more
        submission per call)."""
        session = self._sessions.get((key, "prologue"))
        if session is None:
            o = self._options
            session = _scellis.prepare(traced.prologue, o["backend"], o["tier"],
                                       o["allow_software_adapter"], o["threads"], {}, None,
                                       _user_ops.handles(traced.user_ops))
            self._sessions[(key, "prologue")] = session
        watched, _ = session.run([{n: arrays[n] for n in traced.prologue_inputs}],
                                 traced.prologue_outputs)
        return {n: watched[n][0] for n in traced.prologue_outputs}

    def _run_once(self, traced, arrays, executor):
        o = self._options
        report = _scellis.run(traced.text, o["backend"], o["tier"], o["allow_software_adapter"],
                              o["threads"], arrays, executor,
                              _user_ops.handles(traced.user_ops), self._record)
        report["outputs"] = {n: report["outputs"][n] for n in traced.outputs}
        return RunResult(**report)

    def __call__(self, *args, **kwargs):
        result = self.run(*args, **kwargs)
        traced = self._traced[self._bind(args, kwargs)[2]]
        values = [result.outputs[n] for n in traced.outputs]
        if traced.structure == "single":
            return values[0]
        if traced.structure == "tuple":
            return tuple(values)
        if traced.structure == "list":
            return values
        return dict(zip(traced.structure[1], values))

    def close(self):
        """Frees the prepared sessions (a later call prepares again)."""
        with self._lock:
            for s in self._sessions.values():
                s.dispose()
            self._sessions.clear()
