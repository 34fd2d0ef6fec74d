"""A finished trace made into its version-5 document by the engine (doc::TracedDocument, which
the browser runtime's tracer calls too): the loop rolled up (or the one ``scellis.loop``
declared), its carried state as params, and what a call feeds, uploads and reads back."""
import json

from . import _scellis


class _Traced:
    """A trace made into a document: its text, the names the call's arrays go to and how the
    result is shaped."""

    def __init__(self, made, outputs, structure):
        self.doc = made["doc"]
        self.text = json.dumps(self.doc, allow_nan=False)
        self.fed = made["fed"]         # document input name -> argument name (fed every call)
        self.state = made["state"]     # document param name -> argument name (uploaded every call)
        self.outputs = outputs         # the returned outputs' names, in order
        self.structure = structure     # "single" | "tuple" | "list" | ("dict", keys)
        self.repeat = made["repeat"]
        self.user_ops = []             # the user ops the trace calls (scellis.define_op)
        prologue = made["prologue"]    # the document of computed starting values, if any
        self.prologue = json.dumps(prologue["doc"], allow_nan=False) if prologue else None
        # The arguments the prologue reads, and the carried params whose starting values it gives.
        self.prologue_inputs = prologue["inputs"] if prologue else []
        self.prologue_outputs = prologue["outputs"] if prologue else []


def _traced_document(graph, inputs, returned, loop, name, structure):
    """The engine's document of a finished trace: ``inputs`` the arguments that are arrays,
    ``returned`` {output name: tensor}, ``loop`` the one ``scellis.loop`` declared (None: the
    engine rolls an unrolled loop up), ``structure`` how the call's result is shaped."""
    trace = {"nodes": graph._nodes,
             "returns": [[n, t.id] for n, t in returned.items()],
             "types": [[list(shape), dtype] for shape, dtype in graph._types],
             "needs": graph._needs,
             "inputs": list(inputs),
             "name": name}
    if loop is not None:
        trace["loop"] = loop
    made = _scellis.traced_document(json.dumps(trace, allow_nan=False),
                                    [op._handle for op in graph._user_ops.values()])
    return _Traced(json.loads(made), list(returned), structure)
