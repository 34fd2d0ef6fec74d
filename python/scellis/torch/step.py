"""``scellis.torch.compile_step``: one captured training step (forward, loss, backward,
optimizer step) run from a prepared Scellis session, its state written back on sync()."""

import json

import numpy as np
import torch
import torch.nn.functional as F

from .. import _scellis
from ..errors import ScellisError
from .capture import CaptureError, _capture

_live_steps = {}  # id(optimizer) -> the prepared CompiledStep holding it


def _group_settings(optimizer, group):
    """One parameter group's settings in the train section's spelling."""
    lr = float(group["lr"])
    if type(optimizer) is torch.optim.SGD:
        return {"kind": "sgd", "lr": lr, "momentum": float(group["momentum"]),
                "dampening": float(group["dampening"]), "nesterov": bool(group["nesterov"]),
                "weight_decay": float(group["weight_decay"]),
                "maximize": bool(group.get("maximize", False))}
    if type(optimizer) in (torch.optim.Adam, torch.optim.AdamW):
        if group.get("amsgrad"):
            raise CaptureError("amsgrad=True is not captured (Scellis has no max-of-moments update)")
        beta1, beta2 = group["betas"]
        kind = "adamw" if type(optimizer) is torch.optim.AdamW else "adam"
        return {"kind": kind, "lr": lr, "beta1": float(beta1), "beta2": float(beta2),
                "eps": float(group["eps"]), "weight_decay": float(group["weight_decay"]),
                "maximize": bool(group.get("maximize", False))}
    raise CaptureError(f"{type(optimizer).__name__} is not captured; SGD, Adam and AdamW are")


def _optimizer_spec(optimizer, params, node_of):
    """The train section's optimizer: the first parameter group's settings, and each further
    group as {"params": [param node ids], its settings} (torch.optim's parameter groups)."""
    if {id(p) for g in optimizer.param_groups for p in g["params"]} != {id(p) for p in params}:
        raise CaptureError("the optimizer's parameters must be exactly the model's")
    groups = [_group_settings(optimizer, g) for g in optimizer.param_groups]
    spec = dict(groups[0])
    if len(groups) > 1:
        spec["groups"] = []
        for group, settings in zip(optimizer.param_groups[1:], groups[1:]):
            del settings["kind"]
            settings["params"] = [node_of[id(p)] for p in group["params"]]
            spec["groups"].append(settings)
    return spec


def _loss_kind(loss_fn):
    """"cross_entropy" (class indices as targets) or "mse" (targets shaped as the output)."""
    if loss_fn is F.cross_entropy:
        return "cross_entropy"
    if loss_fn is F.mse_loss:
        return "mse"
    if isinstance(loss_fn, torch.nn.CrossEntropyLoss):
        if (loss_fn.reduction != "mean" or loss_fn.weight is not None
                or loss_fn.label_smoothing != 0.0 or loss_fn.ignore_index >= 0):
            raise CaptureError("CrossEntropyLoss is captured with reduction='mean', no class "
                               "weights, no ignore_index and no label smoothing")
        return "cross_entropy"
    if isinstance(loss_fn, torch.nn.MSELoss):
        if loss_fn.reduction != "mean":
            raise CaptureError("MSELoss is captured with reduction='mean'")
        return "mse"
    raise CaptureError(f"the loss {loss_fn!r} is not captured; cross-entropy and mean squared "
                       "error are")


def compile_step(model, loss_fn, optimizer, *, tier="prod", backend="auto",
                 allow_software_adapter=False):
    """Captures one training step — forward, a loss (cross-entropy or mean squared error), one
    backward, one optimizer step (SGD with momentum, dampening, Nesterov and weight decay; Adam;
    AdamW; parameter groups of any of them) — for Scellis, which differentiates the forward
    itself. Dropout in the forward is kept: its masks are drawn by PyTorch every step, as eager
    steps draw them, and fed. ``step.prepare(x, y)`` makes weights, gradients and optimizer state
    resident; then ``step(x, y)`` (one step, returns the loss), ``step.steps(batches)`` (64 per
    submission), ``step.sync()`` (writes the weights into the model and the moments into
    ``optimizer.state``), ``step.dispose()``. While prepared, the optimizer's own ``step()`` and a
    second capture of it are refused by name."""
    return CompiledStep(model, loss_fn, optimizer, tier=tier, backend=backend,
                        allow_software_adapter=allow_software_adapter)


class CompiledStep:
    def __init__(self, model, loss_fn, optimizer, tier, backend, allow_software_adapter):
        self.loss = _loss_kind(loss_fn)
        self.model, self.optimizer = model, optimizer
        self.params = [p for p in model.parameters()]
        # Refuses what cannot be captured now, before any batch is seen.
        self.kind = _group_settings(optimizer, optimizer.param_groups[0])["kind"]
        for group in optimizer.param_groups[1:]:
            _group_settings(optimizer, group)
        self.options = (backend, tier, bool(allow_software_adapter))
        self.session = None
        self.shapes = None

    def __repr__(self):
        state = "prepared" if self.session else "not prepared"
        return f"CompiledStep({self.kind}, {self.loss}, {state})"

    def prepare(self, x, y):
        """Captures the step for batches shaped as ``x`` (float32 [N, ...]) and ``y`` (class
        indices [N] for cross-entropy, float32 targets shaped as the output for mean squared
        error) and makes its state resident."""
        if id(self.optimizer) in _live_steps:
            raise CaptureError("this optimizer is already captured by a prepared step; dispose it "
                               "first")
        wf, output, params, self.dropouts = _capture(self.model, x.detach().float())
        if self.loss == "cross_entropy":
            target = wf.node("input", {"name": "target", "shape": [int(x.shape[0])]})
            loss = wf.node("cross_entropy", a=output, target=target)
        else:
            target = wf.node("input", {"name": "target", "shape": list(y.shape)})
            diff = wf.node("sub", a=output, b=target)
            loss = wf.node("mean", a=wf.node("mul", a=diff, b=diff))
        node_of = {id(tensor): node for name, tensor, node in params.values()}
        if len(node_of) != len(self.params):
            raise CaptureError("some of the model's parameters are not used by its forward")
        self.spec = _optimizer_spec(self.optimizer, self.params, node_of)
        # Each parameter's settings: its group's.
        self.momentum = {id(p): float(g.get("momentum", 0)) for g in self.optimizer.param_groups
                         for p in g["params"]}
        doc = {"format": "scellis.workflow/1", "name": "compile_step", "determinism": self.options[1],
               "nodes": wf.nodes, "wires": wf.wires,
               "outputs": [{"name": "loss", "from": loss}],
               "train": {"loss": loss, "optimizer": self.spec}}
        initial = {}
        state = self.optimizer.state
        self.names = {}
        # The engine names a parameter's optimizer state after its node: "<node>@m", "<node>@v",
        # "<node>@velocity".
        for qualified, (name, tensor, node) in params.items():
            self.names[qualified] = (name, tensor, node)
            initial[name] = tensor.detach().contiguous().numpy().astype(np.float32, copy=False)
            s = state.get(tensor, {})
            for ours, theirs in (("m", "exp_avg"), ("v", "exp_avg_sq"), ("velocity", "momentum_buffer")):
                if theirs in s and s[theirs] is not None:
                    initial[f"{node}@{ours}"] = s[theirs].detach().contiguous().numpy()
        self.step_count = int(max((float(state[p]["step"]) for p in self.params
                                   if p in state and "step" in state[p]), default=0))
        # SGD keeps no step count; for the engine, step 1 is the one that starts the velocity
        # from the gradient, so a velocity PyTorch already holds means later steps.
        if self.step_count == 0 and any(state.get(p, {}).get("momentum_buffer") is not None
                                        for p in self.params):
            self.step_count = 1
        backend, tier, allow = self.options
        self.session = _scellis.prepare(json.dumps(doc), backend, tier, allow, 0, initial)
        self.shapes = (tuple(x.shape), tuple(y.shape))
        _live_steps[id(self.optimizer)] = self
        self._eager_step = self.optimizer.step

        def refused(*args, **kwargs):
            raise CaptureError("optimizer.step() is refused while a compiled step holds this "
                               "optimizer's state: call step.sync() and step.dispose() first")
        self.optimizer.step = refused
        return self

    backend = property(lambda self: self.session.backend if self.session else None)
    executor = property(lambda self: self.session.executor if self.session else None)
    fallback_reason = property(lambda self: self.session.fallback_reason if self.session else None)

    def _feeds(self, x, y, t):
        if tuple(x.shape) != self.shapes[0] or tuple(y.shape) != self.shapes[1]:
            raise CaptureError(f"a batch of shape {tuple(x.shape)}, {tuple(y.shape)}; the step was "
                               f"prepared for {self.shapes[0]}, {self.shapes[1]}")
        feeds = {"x": x.detach().contiguous().numpy().astype(np.float32, copy=False),
                 "target": y.detach().contiguous().numpy().astype(np.float32, copy=False),
                 "step": np.float32(t)}
        for d in self.dropouts:
            feeds[d.name] = d.draw()
        return feeds

    def steps(self, batches):
        """Runs one step per (x, y) in ``batches``, 64 per run, two runs in flight (the next run's
        batches are converted and recorded while the device runs the one before); returns the
        losses."""
        if self.session is None:
            raise CaptureError("prepare(x, y) first")
        losses = []
        batches = list(batches)

        def finish_oldest():
            watched, _ = self.session.finish()
            losses.extend(float(v) for v in watched["loss"])

        try:
            for first in range(0, len(batches), 64):
                chunk = batches[first:first + 64]
                feeds = [self._feeds(x, y, self.step_count + i + 1)
                         for i, (x, y) in enumerate(chunk)]
                if self.session.runs_in_flight == 2:
                    finish_oldest()
                self.session.start(feeds, ["loss"])
                self.step_count += len(chunk)
            while self.session.runs_in_flight:
                finish_oldest()
        except BaseException:
            # A failed run poisons the session, whose finish then drops what is left; a bad
            # batch (refused before it started) leaves the runs before it to finish.
            while self.session.runs_in_flight:
                try:
                    finish_oldest()
                except ScellisError:
                    pass
            raise
        return losses

    def __call__(self, x, y):
        return self.steps([(x, y)])[0]

    def sync(self):
        """Writes the resident weights into the model's parameters and the moments and step into
        ``optimizer.state``, as eager steps would have left them."""
        if self.session is None:
            raise CaptureError("prepare(x, y) first")
        kind = self.kind
        with torch.no_grad():
            for qualified, (name, tensor, node) in self.names.items():
                tensor.copy_(torch.from_numpy(np.array(self.session.download(name))))
                s = self.optimizer.state[tensor]
                if kind in ("adam", "adamw"):
                    s["exp_avg"] = torch.from_numpy(np.array(self.session.download(f"{node}@m")))
                    s["exp_avg_sq"] = torch.from_numpy(np.array(self.session.download(f"{node}@v")))
                    s["step"] = torch.tensor(float(self.step_count))
                elif self.momentum[id(tensor)] != 0 and self.step_count > 0:
                    s["momentum_buffer"] = torch.from_numpy(np.array(self.session.download(f"{node}@velocity")))

    def dispose(self):
        """Frees the resident state (without writing it back: call sync() first to keep it) and
        gives the optimizer its own step() again."""
        if self.session is not None:
            self.session.dispose()
            self.session = None
            self.optimizer.step = self._eager_step
            _live_steps.pop(id(self.optimizer), None)
