"""What a run returns."""


class RunResult:
    """The report of one run: which backend and executor ran it and why any fallback happened,
    the outputs as NumPy arrays (by name; also ``result[name]``) and the engine's stats;
    ``receipts``: on WebGPU, which of the run's kernels hold conformance receipts on this device
    (None elsewhere); ``run_id``: the run record a one-shot run left in the store (None when not
    recorded, and for a prepared session's steps), which ``scellis.replay`` replays."""

    def __init__(self, backend, executor, fallback_reason, outputs, stats, attempts=(),
                 determinism_tier=None, content_id=None, receipts=None, run_id=None):
        self.backend = backend
        self.executor = executor
        self.fallback_reason = fallback_reason
        self.outputs = outputs
        self.stats = stats
        self.attempts = list(attempts)
        self.determinism_tier = determinism_tier
        self.content_id = content_id
        self.receipts = receipts
        self.run_id = run_id

    def __getitem__(self, name):
        return self.outputs[name]

    def __repr__(self):
        return (f"RunResult(backend={self.backend!r}, executor={self.executor!r}, "
                f"fallback_reason={self.fallback_reason!r}, outputs={sorted(self.outputs)})")
