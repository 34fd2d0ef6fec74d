"""Rolling a traced loop up (scellis.pipeline): an ordinary ``for`` loop traced once records
every copy of its body; the longest stretch of nodes that is one body repeated, each copy reading
the previous copy's values where the first read the loop's starting values, becomes the
document's graph with ``repeat`` set to the number of copies. Every copy is checked node by node
and port by port against the first, so the roll-up is exact. Nodes are graph-protocol dicts; a
node's ports are its op's, a user op's (``user_ops``: name -> UserOp) or the engine table's."""
import functools
import json

import numpy as np

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


def _read_slot(node, slot):
    return node[slot[0]][slot[1]] if isinstance(slot, tuple) else node[slot]


def _write_slot(node, slot, ref):
    """Sets one slot of ``node``, a copy whose list ports are its own lists."""
    if isinstance(slot, tuple):
        node[slot[0]][slot[1]] = ref
    else:
        node[slot] = ref


# ---- rolling an unrolled loop up ----

def _codes(nodes, user_ops):
    """An integer per node: equal when the op and attributes are (ports aside)."""
    seen, out = {}, []
    for node in nodes:
        ports = _port_names(node["op"], user_ops)
        key = json.dumps({k: v for k, v in node.items() if k != "id" and k not in ports},
                         sort_keys=True)
        out.append(seen.setdefault(key, len(seen)))
    return np.array(out, dtype=np.int64)


def _verify(nodes, start, length, count, user_ops):
    """How many copies of the body [start, start + length) follow each other exactly (up to
    ``count``), with the carry map and the carried reads; (copies, carry, carried)."""
    body = range(start, start + length)
    ports = [_ports(nodes[j], user_ops) for j in body]
    roles, carry = {}, {}
    for k in range(1, count):
        shift = k * length
        for j, first in zip(body, ports):
            i = j + shift
            if i >= len(nodes) or \
                    [p for p, _ in _ports(nodes[i], user_ops)] != [p for p, _ in first]:
                return k, carry, roles
            for port, a in first:
                b = _read_slot(nodes[i], port)
                if a >= start:
                    if b != a + shift:
                        return k, carry, roles
                    continue
                role = roles.get((j, port))
                if role is None:  # the second copy says what the read is
                    if b == a:
                        role = "invariant"
                    elif start <= b < start + length and carry.get(a, b) == b:
                        role = "carried"
                        carry[a] = b
                    else:
                        return k, carry, roles
                    roles[(j, port)] = role
                elif role == "invariant" and b != a:
                    return k, carry, roles
                elif role == "carried" and b != carry[a] + shift - length:
                    return k, carry, roles
    return count, carry, roles


def _escapes(nodes, outputs, loop, user_ops):
    """Whether anything after the loop (or an output) reads a copy other than the last."""
    def bad(ref):
        return loop.start <= ref < loop.last
    if any(bad(t) for t in outputs):
        return True
    return any(bad(ref) for node in nodes[loop.end:] for _, ref in _ports(node, user_ops))


def _body_lengths(codes, exhaustive=256, per_body=16, most=256):
    """The body lengths worth scanning for: every length up to ``exhaustive``, and the distances
    between the k-th next occurrences of an op (k up to ``per_body``, the times one op may occur
    in a body) — a body's length is one of them, and scanning only these keeps a long trace
    (Gray-Scott's 768 steps are 26k nodes) from costing a scan per length."""
    n = len(codes)
    lengths = set(range(1, min(exhaustive, n // 2) + 1))
    counts = {}
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    for positions in np.split(order, bounds):
        for k in range(1, min(per_body, len(positions) - 1) + 1):
            gaps, times = np.unique(positions[k:] - positions[:-k], return_counts=True)
            for gap, t in zip(gaps.tolist(), times.tolist()):
                if gap <= n // 2:
                    counts[gap] = counts.get(gap, 0) + t
    lengths.update(sorted(counts, key=counts.get, reverse=True)[:most])
    return sorted(lengths)


def _find_loop(nodes, outputs, user_ops):
    """The longest stretch of the trace that is one body repeated (at least twice) whose copies
    but the last are read by nothing after it, as a _Loop; None when there is none. Candidates
    come from runs of equal ops at a distance L (the body's length), longest first; each is
    verified exactly."""
    codes = _codes(nodes, user_ops)
    n = len(codes)
    candidates = []
    for length in _body_lengths(codes):
        same = np.concatenate(([0], (codes[:-length] == codes[length:]).astype(np.int8), [0]))
        edges = np.diff(same)
        starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        for r0, run in zip(starts, ends - starts):
            if run >= length:
                candidates.append(((run // length + 1) * length, -length, int(r0), int(run)))
    candidates.sort(reverse=True)
    best = None
    for cover, neg_length, r0, run in candidates:
        if best is not None and cover <= best.length * best.count:
            break
        length = -neg_length
        for start in range(r0, r0 + length):
            count = (r0 + run - start) // length + 1
            if count < 2 or (best is not None and count * length <= best.length * best.count):
                continue
            copies, carry, roles = _verify(nodes, start, length, count, user_ops)
            if copies < 2:
                continue
            carried = {key for key, role in roles.items() if role == "carried"}
            # Fewer copies when something after the loop reads one of its middle copies.
            for k in range(copies, 1, -1):
                found = _Loop(start, length, k, carry, carried, traced_copies=k)
                if not _escapes(nodes, outputs, found, user_ops):
                    if best is None or k * length > best.length * best.count:
                        best = found
                    break
    return best
