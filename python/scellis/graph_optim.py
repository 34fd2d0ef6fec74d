"""The optimizer steps of a Graph: one step of SGD, SGD with momentum or Adam on a parameter, as
nodes of the engine's update ops (one node per updated value: the parameter, and a velocity or
moments where the optimizer keeps them).

They are built as any node is (Graph._add, typed by the engine); a training loop carries their
results into the next step (Graph.prepare's ``carry``).
"""


class _GraphOptimizers:
    """The optimizer-step builders of a Graph (scellis.graph)."""

    def sgd(self, param, grad, lr=1e-3, weight_decay=0.0, maximize=False):
        """The parameter after one SGD step (``sgd_update``)."""
        return self._add("sgd_update", {"param": param, "grad": grad},
                         {"lr": lr, "weight_decay": weight_decay, "maximize": maximize})

    def momentum(self, param, grad, velocity, t, lr=1e-3, momentum=0.9, dampening=0.0,
                 weight_decay=0.0, nesterov=False, maximize=False):
        """(parameter, velocity) after one SGD-with-momentum step at step count ``t`` (a scalar
        tensor; at t <= 1 the velocity starts as the gradient, as in PyTorch)."""
        ports = {"param": param, "grad": grad, "velocity": velocity, "t": t}
        attrs = {"lr": lr, "momentum": momentum, "dampening": dampening,
                 "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize}
        return (self._add("momentum_update", ports, attrs),
                self._add("momentum_velocity", ports, attrs))

    def adam(self, param, grad, m, v, t, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
             weight_decay=None, decoupled=False, maximize=False):
        """(parameter, m, v) after one Adam step (AdamW with ``decoupled=True``) at step count
        ``t`` (a scalar tensor, 1 on the first step)."""
        ports = {"param": param, "grad": grad, "m": m, "v": v, "t": t}
        attrs = {"lr": lr, "beta1": beta1, "beta2": beta2, "eps": eps, "decoupled": decoupled,
                 "maximize": maximize}
        if weight_decay is not None:
            attrs["weight_decay"] = weight_decay
        return (self._add("adam_update", ports, attrs),
                self._add("adam_m", ports, attrs),
                self._add("adam_v", ports, attrs))
