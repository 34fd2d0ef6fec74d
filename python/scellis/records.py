"""Run records from Python. A one-shot run (``Graph.run``, a pipeline's one-shot path) leaves a
record in the store as ``scellis run`` does — the document, settings, digests of every input and
output, the device profile — and returns its id as ``run_id``; ``record=False`` or
SCELLIS_NO_RECORD=1 turns that off. A prepared session's steps leave none. The store is
$SCELLIS_STORE, else ~/.local/share/scellis/store.

    r = g.run(tier="prod", backend="cpu", out=out)
    scellis.runs(limit=5)[0]["id"] == r.run_id
    scellis.replay(r.run_id)["agree"]        # as `scellis replay RUN_ID --json` prints

A run that used a user op with a Python reference (``scellis.define_op``) records the op's
signature, WGSL and version strings, not the function: replay it with the op supplied,
``scellis.replay(run_id, ops=[op])``. Without it the replay is refused
(``replay-needs-user-op``), and an op whose signature, WGSL or version differs from the record's
too (``replay-user-op-mismatch``); neither runs anything.
"""
from . import _scellis
from . import user_ops as _user_ops
from .errors import UserReferenceError


def runs(limit=20, store=""):
    """The newest run records, newest first (``limit`` 0: all): dicts with ``run_id``, ``date``,
    ``command``, ``backend``, ``tier``, ``content_id``, as ``scellis runs --json`` lists them.
    ``store``: "" for the default store."""
    return _scellis.runs(int(limit), store)["runs"]


def replay(run_id, ops=(), threads=0, store=""):
    """Runs the recorded document again with the recorded settings on the recorded backend and
    compares every output with the record: the dict ``scellis replay --json`` prints (``agree``,
    ``guarantee``, ``outputs`` [{``name``, ``digest_equal``, ``ok``, ...}], ``disagreement``).
    ``ops``: the user ops (UserOps) the recorded run used. A replay that cannot be made raises
    ReplayRefusedError with the engine's code (``replay-needs-user-op``,
    ``replay-user-op-mismatch``, ``replay-backend-unavailable``, ...)."""
    ops = list(ops)
    try:
        return _scellis.replay(run_id, _user_ops.handles(ops), int(threads), store)
    except UserReferenceError as e:
        _user_ops.reraise_from_reference(e, ops)
