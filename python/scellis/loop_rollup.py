"""Rolling a traced loop up (scellis.pipeline): an ordinary ``for`` loop traced once records
every copy of its body; the longest stretch of nodes that is one body repeated, each copy reading
the previous copy's values where the first read the loop's starting values, becomes the
document's graph with ``repeat`` set to the number of copies. The engine finds that stretch
(doc::FindTracedLoop, which the browser runtime calls too) and checks every copy node by node and
port by port against the first, so the roll-up is exact. Nodes are graph-protocol dicts; a node's
ports are a user op's (``user_ops``: name -> UserOp) or the engine table's."""
import functools
import json

from . import _scellis
from . import ops as _ops

class _Loop:
    """A loop in a trace: the body is nodes [start, start + length) (its first copy), run
    ``count`` times; ``carry`` maps a node before the loop that the first copy reads as state to
    the body node whose previous value later copies read; ``carried`` holds the (node, port)
    reads of the first copy that are state (the other reads of nodes before the loop are
    loop-invariant)."""

    def __init__(self, start, length, count, carry, carried, traced_copies):
        self.start, self.length, self.count = start, length, count
        self.carry, self.carried = carry, carried
        self.traced_copies = traced_copies  # `count` for an unrolled loop, 1 for scellis.loop

    @property
    def end(self):
        """The first node after the copies in the trace."""
        return self.start + self.length * self.traced_copies

    @property
    def last(self):
        """The first node of the last copy in the trace."""
        return self.end - self.length


@functools.lru_cache(maxsize=None)
def _builtin_port_names(op):
    return frozenset(p["name"] for p in _ops.table()[op]["inputs"])


def _port_names(op, user_ops):
    """The input ports of ``op``: a user op's the trace uses (``user_ops``: name -> UserOp), else
    the engine table's."""
    user = user_ops.get(op)
    return frozenset(user.ports) if user is not None else _builtin_port_names(op)


def _ports(node, user_ops):
    """(slot, referenced node id) of a node. A slot is a port's name, or (name, index) for an
    entry of a list port (concat's `inputs`), so each entry is read and renumbered on its own."""
    names = _port_names(node["op"], user_ops)
    slots = []
    for k, v in node.items():
        if k in names:
            slots.extend((((k, i), r) for i, r in enumerate(v)) if isinstance(v, list)
                         else [(k, v)])
    return slots


def _write_slot(node, slot, ref):
    """Sets one slot of ``node``, a copy whose list ports are its own lists."""
    if isinstance(slot, tuple):
        node[slot[0]][slot[1]] = ref
    else:
        node[slot] = ref


# ---- rolling an unrolled loop up: the engine's doc::FindTracedLoop ----

def _find_loop(nodes, outputs, user_ops):
    """The longest stretch of the trace that is one body repeated (at least twice) whose copies
    but the last are read by nothing after it, as a _Loop; None when there is none. The engine
    finds it (doc::FindTracedLoop, the roll-up every front end calls), verifying every copy."""
    trace = json.dumps({"nodes": nodes, "outputs": list(outputs)}, allow_nan=False)
    found = json.loads(_scellis.find_loop(trace, [op._handle for op in user_ops.values()]))
    if found is None:
        return None
    carried = {(read[0], read[1] if len(read) == 2 else (read[1], read[2]))
               for read in found["carried"]}
    return _Loop(found["start"], found["length"], found["count"],
                 {before: after for before, after in found["carry"]}, carried,
                 traced_copies=found["count"])
