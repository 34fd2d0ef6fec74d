"""A finished trace made into its version-5 document: the kept nodes renumbered, the loop's
carried state as params, and what a call feeds, uploads and reads back."""

from .loop_rollup import _ports, _write_slot


class _Traced:
    """A trace made into a document: its text, the names the call's arrays go to and how the
    result is shaped."""

    def __init__(self, text, doc, fed, state, outputs, structure, loop):
        self.text = text
        self.doc = doc
        self.fed = fed             # document input name -> argument name (fed every call)
        self.state = state         # document param name -> argument name (uploaded every call)
        self.outputs = outputs     # the returned outputs' names, in order
        self.structure = structure  # "single" | "tuple" | "list" | ("dict", keys)
        self.loop = loop
        self.repeat = loop.count if loop else 1
        self.user_ops = []          # the user ops the trace calls (scellis.define_op)
        self.prologue = None        # the document of computed starting values, if any
        self.prologue_inputs = []   # the arguments it reads
        self.prologue_outputs = []  # the starting values it computes (carried params' names)


def _document(graph, inputs, returned, loop, name):
    """The version-5 document of a finished trace: the nodes before the loop, the loop's first
    copy (its reads of state pointed at carried params) and the nodes after it (their reads of the
    last copy pointed at the first), with ``repeat`` the loop's count."""
    nodes, user_ops = graph._nodes, graph._user_ops
    out_names = list(returned)
    if loop is None:
        keep = range(len(nodes))
        def source(ref):
            return ref
    else:
        keep = list(range(loop.start + loop.length)) + list(range(loop.end, len(nodes)))
        def source(ref):
            return ref - (loop.last - loop.start) if loop.last <= ref < loop.end else ref
    # Which reads there are of each node, besides the carried ones.
    plain_reads = set(source(t.id) for t in returned.values())
    for i in keep:
        for port, ref in _ports(nodes[i], user_ops):
            if loop is None or (i, port) not in loop.carried:
                plain_reads.add(source(ref))
    # The carried state: a param per node the loop starts from, taking its body node's value.
    state_param, state, fed, prologue = {}, {}, {}, {}
    by_id = {}
    for name_, t in returned.items():
        by_id.setdefault(source(t.id), name_)
    extra_outputs = {}
    for before, after in (loop.carry.items() if loop else ()):
        node = nodes[before]
        if node["op"] == "input" and node["name"] in inputs:
            arg = node["name"]
            pname = arg if before not in plain_reads else f"{arg}.state"
        else:
            # A starting value computed before the loop: the prologue computes it on each call.
            arg = pname = f"start.{len(prologue)}"
            prologue[pname] = before
        out = by_id.get(after)
        if out is None:
            out = f"{pname}.next"
            extra_outputs[out] = after
            by_id[after] = out
        state_param[before] = (pname, out)
        state[pname] = arg
    # Renumbered: state params first, then the kept nodes in order.
    doc_nodes, new_id = [], {}
    for before, (pname, out) in state_param.items():
        shape, dtype = graph._types[before]   # the engine's
        new_id[("state", before)] = len(doc_nodes)
        doc_nodes.append({"id": len(doc_nodes), "op": "param", "name": pname,
                          "shape": list(shape), "dtype": dtype,
                          "init": {"kind": "zeros"}, "carry": out})
    reachable = _reachable(nodes, keep, source, loop,
                           [source(t.id) for t in returned.values()] + list(extra_outputs.values()),
                           user_ops)
    for i in keep:
        if i not in reachable:
            continue
        node = {k: list(v) if isinstance(v, list) else v for k, v in nodes[i].items()}
        new_id[i] = len(doc_nodes)
        node["id"] = len(doc_nodes)
        for port, ref in _ports(nodes[i], user_ops):
            if loop is not None and (i, port) in loop.carried:
                _write_slot(node, port, new_id[("state", ref)])
            else:
                _write_slot(node, port, new_id[source(ref)])
        if node["op"] == "input":
            # An argument read only as state is its carried param; one also read as a constant
            # (or before the loop) is fed beside its `.state` copy.
            if node["name"] in state:
                continue
            fed[node["name"]] = node["name"]
        doc_nodes.append(node)
    needed = max([graph._needs[i] for i in keep if i in reachable] + [5 if loop else 1])
    doc = {"version": needed}
    if name:
        doc["name"] = name
    if loop is not None:
        doc["repeat"] = loop.count
    doc["nodes"] = doc_nodes
    doc["outputs"] = ([{"name": n, "id": new_id[source(t.id)]} for n, t in returned.items()] +
                      [{"name": n, "id": new_id[i]} for n, i in extra_outputs.items()])
    return doc, fed, state, out_names, prologue


def _reachable(nodes, keep, source, loop, roots, user_ops):
    """The kept nodes the roots need, reads of state included."""
    kept = set(keep)
    seen, stack = set(), list(roots)
    while stack:
        i = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        for port, ref in _ports(nodes[i], user_ops):
            if loop is not None and (i, port) in loop.carried:
                stack.append(loop.carry[ref])
            elif source(ref) in kept:
                stack.append(source(ref))
    return seen
