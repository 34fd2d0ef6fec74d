"""Scellis from Python: graphs of tensor ops built with methods, run by the Scellis engine on a
GPU through WebGPU (Dawn) or on its deterministic CPU reference, with prepared sessions that keep
training state resident on the device.

    import numpy as np, scellis
    g = scellis.Graph()
    a = g.input("a", np.array([-2, 3, 4], np.float32))
    b = g.input("b", np.array([10, 20, 30], np.float32))
    r = g.run(tier="prod", values=(a * b).relu())
    r.backend, r.outputs["values"]      # "cpu" or "webgpu", array([0., 60., 120.])

``@scellis.pipeline`` traces a function with a loop once into a repeated graph (protocol version
5) and runs it from a prepared session on each call (see scellis.pipeline).

``scellis.define_op`` adds an op of one's own — its WGSL and a NumPy reference function — usable in
a Graph like any op; ``scellis.conform`` proves its WGSL against the reference on a GPU.

A one-shot run leaves a run record in the store, as ``scellis run`` does (``result.run_id``);
``scellis.runs()`` lists them and ``scellis.replay(run_id)`` replays one (see scellis.records).
"""

from . import _scellis
from .errors import (DeviceError, EngineInternalError, GraphError, ReplayRefusedError,
                     ScellisError, SessionStateError, TraceError, UnsupportedOpError,
                     UserReferenceError)
from .data import load_dataset
from .graph import Graph
from .tensor import Tensor, concat, stack
from .ops import MAX_GRAPH_VERSION, MAX_STEPS_PER_SUBMISSION
from .pipeline import Pipeline, loop, pipeline
from .records import replay, runs
from .result import RunResult
from .session import Session, prepare_workflow
from .user_ops import UserOp, conform, define_op
from .worker import shutdown

__version__ = "0.1.0"

__all__ = ["Graph", "Tensor", "Session", "RunResult", "ScellisError", "GraphError",
           "DeviceError", "SessionStateError", "EngineInternalError", "UnsupportedOpError",
           "MAX_GRAPH_VERSION", "MAX_STEPS_PER_SUBMISSION", "shutdown", "load_dataset",
           "TraceError", "pipeline", "loop", "Pipeline", "concat", "stack",
           "prepare_workflow", "define_op", "UserOp", "conform", "UserReferenceError",
           "runs", "replay", "ReplayRefusedError"]
