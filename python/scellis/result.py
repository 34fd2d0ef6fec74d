"""What a run returns."""


class RunResult:
    """The report of one run: which backend and executor ran it and why any fallback happened,
    the outputs as NumPy arrays (by name; also ``result[name]``) and the engine's stats;
    ``receipts``: on WebGPU, which of the run's kernels hold conformance receipts on this device
    (None elsewhere)."""

    def __init__(self, backend, executor, fallback_reason, outputs, stats, attempts=(),
                 determinism_tier=None, content_id=None, receipts=None):
        self.backend = backend
        self.executor = executor
        self.fallback_reason = fallback_reason
        self.outputs = outputs
        self.stats = stats
        self.attempts = list(attempts)
        self.determinism_tier = determinism_tier
        self.content_id = content_id
        self.receipts = receipts

    def __getitem__(self, name):
        return self.outputs[name]

    def __repr__(self):
        return (f"RunResult(backend={self.backend!r}, executor={self.executor!r}, "
                f"fallback_reason={self.fallback_reason!r}, outputs={sorted(self.outputs)})")
