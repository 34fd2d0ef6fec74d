"""Errors of the Python package: every engine failure is a ScellisError carrying the engine's
diagnostic code (``bad-feed``, ``shape-mismatch`` ...), the JSON pointer into the graph document
(``/nodes/3``) and the help line. The subclass says what kind of failure it was:

- GraphError: bad input (a graph, a feed, a flag); nothing ran and nothing changed.
- DeviceError: the device failed after work began (a session is then poisoned).
- SessionStateError: a disposed or poisoned session was used, or a closed worker.
- EngineInternalError: a bug in Scellis.
- UnsupportedOpError: the engine's op table has no such op (raised while building the graph).
- UserReferenceError: the Python reference of a user op (``scellis.define_op``) raised or returned
  another shape; raised from the reference's own exception when there is one.
- ReplayRefusedError: ``scellis.replay`` could not replay the record as it promises (a user op
  not supplied or another than the record's, a backend or device profile not here, a value the
  record did not keep); nothing ran.
- TraceError: a traced pipeline broke a rule of tracing (a value read, data-dependent control
  flow, a stale handle, a loop count that is not a static int).
"""
import json


class ScellisError(Exception):
    """An engine diagnostic: ``code``, ``pointer``, ``message``, ``help``, ``where``; several
    diagnostics of one failure are all in ``diagnostics`` (the first one gives the attributes)."""

    kind = "user"

    def __init__(self, code, message, pointer="", help="", where="", text=None, diagnostics=None):
        self.code = code
        self.message = message
        self.pointer = pointer
        self.help = help
        self.where = where
        self.diagnostics = diagnostics or [
            {"kind": self.kind, "code": code, "pointer": pointer, "where": where,
             "message": message, "help": help}
        ]
        if text is None:
            location = f"{pointer}: " if pointer else ""
            text = f"{location}error[{code}]: {message}" + (f"\n  help: {help}" if help else "")
        self.text = text
        super().__init__(text)


class GraphError(ScellisError):
    """Bad input: the graph, a feed, an option. Nothing was executed or changed."""

    kind = "user"


class DeviceError(ScellisError):
    """The device failed after work began."""

    kind = "runtime"


class SessionStateError(ScellisError):
    """A disposed or poisoned session was used (or a closed worker)."""

    kind = "state"


class EngineInternalError(ScellisError):
    """A bug in Scellis."""

    kind = "internal"


class UnsupportedOpError(GraphError):
    """The engine's op table lacks the op a method or ``Graph.op`` asked for."""


class UserReferenceError(GraphError):
    """The reference function of a user op (``scellis.define_op``) failed while it ran:
    ``user-reference-failed`` (it raised; the exception is this one's ``__cause__``) or
    ``user-reference-shape`` (it returned another shape than the op declares). ``pointer`` is
    ``/ops/NAME/reference``."""


class TraceError(GraphError):
    """A rule of tracing broken while ``scellis.pipeline`` traced its function: the tensors there
    are symbolic, so reading a value (``value-read-in-trace``), branching on one
    (``data-dependent-control-flow``), using a tensor of an earlier trace (``stale-handle``) or
    looping a count that is not a static int (``loop-count-not-static``) is refused while the
    document is built, before anything runs."""


class ReplayRefusedError(GraphError):
    """A replay (``scellis.replay``) refused before running: the record needs what is not given
    here (``replay-needs-user-op``, ``replay-user-op-mismatch``, ``replay-backend-unavailable``,
    ``replay-profile-mismatch``, ``replay-needs-checkpoint``) or cannot be judged
    (``record-tensor-not-kept``), or the id names no record (``not-a-run-record``,
    ``store-object-missing``)."""


# Codes whose exception is more specific than their kind's.
_BY_CODE = {
    "user-reference-failed": UserReferenceError,
    "user-reference-shape": UserReferenceError,
    "replay-needs-user-op": ReplayRefusedError,
    "replay-user-op-mismatch": ReplayRefusedError,
    "replay-backend-unavailable": ReplayRefusedError,
    "replay-profile-mismatch": ReplayRefusedError,
    "replay-needs-checkpoint": ReplayRefusedError,
    "record-tensor-not-kept": ReplayRefusedError,
    "not-a-run-record": ReplayRefusedError,
    "store-object-missing": ReplayRefusedError,
}

_BY_KIND = {
    "user": GraphError,
    "runtime": DeviceError,
    "state": SessionStateError,
    "internal": EngineInternalError,
}


def from_engine(diagnostics_json):
    """The exception for the engine's diagnostics, given in their JSON form (called by the
    extension module); absent pointers, locations and help read as empty strings."""
    diagnostics = json.loads(diagnostics_json)
    for d in diagnostics:
        for key in ("pointer", "where", "help"):
            d[key] = d.get(key) or ""
    first = diagnostics[0]
    cls = _BY_CODE.get(first["code"]) or _BY_KIND.get(first["kind"], ScellisError)
    text = "\n".join(d["text"] for d in diagnostics)
    return cls(first["code"], first["message"], pointer=first["pointer"], help=first["help"],
               where=first["where"], text=text, diagnostics=list(diagnostics))
