"""The engine's op table, as the engine reports it: which ops exist, since which graph protocol
version, and their ports and attributes. The Graph API builds only nodes this table has."""

import functools
import json

from . import _scellis


@functools.lru_cache(maxsize=None)
def table():
    """{op name: spec} for every op and source node type of this build (``ops::ToJson``)."""
    j = json.loads(_scellis.ops_json())
    return {spec["name"]: spec for spec in j["ops"] + j["node_types"]}


def names():
    """Every op name, sorted."""
    return sorted(table())


MAX_GRAPH_VERSION = _scellis.MAX_GRAPH_VERSION
MAX_STEPS_PER_SUBMISSION = _scellis.MAX_STEPS_PER_SUBMISSION
