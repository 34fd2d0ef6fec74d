"""What a Tensor refuses: it has no value until its graph runs, so the conversions that read one
(float(), int(), bool(), NumPy's asarray, a range() bound) are errors, and inside a traced
pipeline the TraceError says why a traced function cannot read data.
"""

from .errors import TraceError


def _trace_error(code, message, help=""):
    return TraceError(code, message, help=help)


def _stale(t):
    what = repr(t) if t is not None else "a tensor"
    return _trace_error(
        "stale-handle",
        f"{what} belongs to an earlier, finished trace of a pipeline: tensors of a trace are "
        "symbolic and die with it",
        help="keep no tensors between calls; return them from the pipeline and use the arrays")


class _NoValue:
    """The value conversions of a Tensor (scellis.tensor), each refused."""

    __slots__ = ()  # Tensor keeps its own slots and no instance dict

    # ---- values: a Tensor has none until its graph runs ----

    def _read(self, what):
        if self.graph._trace is not None:
            raise _trace_error(
                "value-read-in-trace",
                f"{what} reads the value of {self!r} inside a traced pipeline, where tensors are "
                "symbolic: the function is traced once and its values exist only when it runs",
                help="compute with tensor ops (where(), maximum() ...) and read the pipeline's "
                     "result")
        raise TypeError(f"{what}: a scellis Tensor has no value until its graph runs; read the "
                        "RunResult's outputs")

    def __float__(self): return self._read("float()")
    def __int__(self): return self._read("int()")
    def __index__(self):
        if self.graph._trace is not None:  # range(t), a list index: a count only data knows
            raise _trace_error(
                "loop-count-not-static",
                f"{self!r} is used as a Python int (a range() bound, a list index) inside a "
                "traced pipeline, where its value is not known",
                help="loop a static count (a Python int, or a constant argument of the "
                     "pipeline); select with where() instead of indexing by value")
        return self._read("using a tensor as an index")
    def __complex__(self): return self._read("complex()")
    def item(self): return self._read("item()")
    def tolist(self): return self._read("tolist()")
    def numpy(self): return self._read("numpy()")

    def __array__(self, dtype=None, copy=None):
        return self._read("converting to a NumPy array")

    def __bool__(self):
        if self.graph._trace is not None:
            raise _trace_error(
                "data-dependent-control-flow",
                f"the truth value of {self!r} decides Python control flow (if, while, and, or) "
                "inside a traced pipeline: the trace records one path, so the branch cannot "
                "depend on data",
                help="select with where(condition, a, b); loop a static count with "
                     "scellis.loop or range(n)")
        return True
