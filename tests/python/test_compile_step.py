"""scellis.torch.compile_step: a captured training step (forward, a cross-entropy or mean squared
error loss, one backward that Scellis derives itself, one optimizer step, parameter groups,
dropout masks drawn as eager draws them) against the same model trained eagerly by PyTorch 2.11
from the same weights, batches and random seed — losses and weights after 20 steps to float32
rounding (or, where an element is ill-conditioned, as near the same steps in float64 as PyTorch's
float32 is), on the CPU reference and on SwiftShader; state written back by sync() so eager training
(and a second capture) continue exactly; what cannot be captured is refused by name."""
import copy

import pytest
import torch
import torch.nn.functional as F

import scellis.torch as st

TOL = {"rtol": 2e-4, "atol": 2e-5}


class FunctionalMlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(10, 12), torch.nn.Linear(12, 4)

    def forward(self, x):
        return self.b(F.relu(self.a(x)))


def mlp(*layers):
    return torch.nn.Sequential(*layers)


def two_groups(make_optimizer):
    """The first layer in one group with the optimizer's settings, the rest in a second that
    overrides some."""
    def make(model, **overrides):
        first = list(model[0].parameters())
        rest = [p for p in model.parameters() if all(p is not q for q in first)]
        return make_optimizer([{"params": first}, {"params": rest, **overrides}])
    return make


CE, MSE = F.cross_entropy, torch.nn.MSELoss()

# name: (model, optimizer of the model, loss)
FIXTURES = {
    "relu-sgd": (lambda: mlp(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)),
                 lambda m: torch.optim.SGD(m.parameters(), lr=0.1), CE),
    "relu-momentum": (lambda: mlp(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)),
                      lambda m: torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9), CE),
    "gelu-nesterov-decay": (lambda: mlp(torch.nn.Linear(10, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)),
                            lambda m: torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, nesterov=True,
                                                      weight_decay=1e-3), CE),
    "tanh-dampening-mse": (lambda: mlp(torch.nn.Linear(10, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4)),
                           lambda m: torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.5, dampening=0.1),
                           MSE),
    "sigmoid-adam": (lambda: mlp(torch.nn.Linear(10, 16), torch.nn.Sigmoid(), torch.nn.Linear(16, 4)),
                     lambda m: torch.optim.Adam(m.parameters(), lr=1e-2), torch.nn.CrossEntropyLoss()),
    "relu-adam-decay-mse": (lambda: mlp(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)),
                            lambda m: torch.optim.Adam(m.parameters(), lr=5e-3, betas=(0.8, 0.99),
                                                       weight_decay=1e-2), F.mse_loss),
    "gelu-adamw": (lambda: mlp(torch.nn.Linear(10, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)),
                   lambda m: torch.optim.AdamW(m.parameters(), lr=1e-2), torch.nn.CrossEntropyLoss()),
    "deep-adam": (lambda: mlp(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 16),
                              torch.nn.Tanh(), torch.nn.Linear(16, 4)),
                  lambda m: torch.optim.Adam(m.parameters(), lr=1e-2), CE),
    "functional-relu-sgd": (FunctionalMlp, lambda m: torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.8),
                            CE),
    "no-bias-adamw": (lambda: mlp(torch.nn.Linear(10, 16, bias=False), torch.nn.ReLU(), torch.nn.Linear(16, 4)),
                      lambda m: torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1), CE),
    "two-groups-sgd": (lambda: mlp(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)),
                       lambda m: two_groups(lambda g: torch.optim.SGD(g, lr=0.05, momentum=0.9))(
                           m, lr=0.2, momentum=0.0, weight_decay=1e-2), CE),
    "two-groups-adamw-mse": (lambda: mlp(torch.nn.Linear(10, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)),
                             lambda m: two_groups(lambda g: torch.optim.AdamW(g, lr=1e-2))(
                                 m, lr=3e-3, betas=(0.5, 0.9), weight_decay=0.0), MSE),
    "maximize-momentum-mse": (lambda: mlp(torch.nn.Linear(10, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4)),
                              lambda m: torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9,
                                                        maximize=True), MSE),
    "maximize-adam-group": (lambda: mlp(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)),
                            lambda m: two_groups(lambda g: torch.optim.Adam(g, lr=1e-2))(m, maximize=True),
                            CE),
    "dropout-adam": (lambda: mlp(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Dropout(0.3),
                                 torch.nn.Linear(16, 4)),
                     lambda m: torch.optim.Adam(m.parameters(), lr=1e-2), CE),
}


def targets(loss_fn, n):
    mse = loss_fn is F.mse_loss or isinstance(loss_fn, torch.nn.MSELoss)
    return torch.randn(n, 4) if mse else torch.randint(0, 4, (n,))


def batches(n, steps=20, loss_fn=CE):
    return [(torch.randn(n, 10), targets(loss_fn, n)) for _ in range(steps)]


def eager(model, optimizer, data, loss_fn=F.cross_entropy):
    losses = []
    for x, y in data:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def capture(model, optimizer, backend, loss_fn=F.cross_entropy):
    return st.compile_step(model, loss_fn, optimizer, tier="prod", **backend)


def eager_float64(model, make_optimizer, data, loss_fn):
    """The same eager steps in float64 on `model`, a float64 copy (assert_as_exact_as_pytorch)."""
    data = [(x.double(), y.double() if y.is_floating_point() else y) for x, y in data]
    return eager(model, make_optimizer(model), data, loss_fn)


def assert_as_exact_as_pytorch(got, want, exact):
    """Each element of `got` within TOL of PyTorch's float32 answer `want`, or, where it is not, no
    further from the float64 answer `exact` than TOL plus four times PyTorch's own float32 error
    there. Some elements are ill-conditioned (AdamW's update of a gradient that is nearly zero turns
    rounding into steps of the learning rate's size), and there both float32 answers stray from the
    exact one by more than TOL, each its own way."""
    got, want, exact = (torch.as_tensor(v, dtype=torch.float64) for v in (got, want, exact))
    near_peer = (got - want).abs() <= TOL["atol"] + TOL["rtol"] * want.abs()
    allowed = TOL["atol"] + TOL["rtol"] * exact.abs() + 4 * (want - exact).abs()
    off = ~near_peer & ((got - exact).abs() > allowed)
    assert not off.any(), (
        f"{int(off.sum())} of {off.numel()} elements neither within {TOL} of PyTorch float32 nor "
        f"as near float64 as it: got {got[off][:4].tolist()}, float32 {want[off][:4].tolist()}, "
        f"float64 {exact[off][:4].tolist()}")


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_twenty_captured_steps_match_pytorch(name, backend, rng):
    torch.manual_seed(int(rng.integers(2**31)))
    make_model, make_optimizer, loss_fn = FIXTURES[name]
    model = make_model()
    twin = copy.deepcopy(model)
    data = batches(8, loss_fn=loss_fn)
    # Dropout masks come from the same seed on both sides: eager draws them in its forward, the
    # captured step before each step, in the same order.
    seed = int(rng.integers(2**31))
    step = capture(model, make_optimizer(model), backend, loss_fn=loss_fn)
    step.prepare(*data[0])
    assert step.backend == backend["backend"]
    torch.manual_seed(seed)
    got = step.steps(data)
    step.sync()
    step.dispose()
    exact_twin = copy.deepcopy(twin).double()
    torch.manual_seed(seed)
    want = eager(twin, make_optimizer(twin), data, loss_fn)
    # The same steps in float64, from the same weights, batches and seed.
    torch.manual_seed(seed)
    exact = eager_float64(exact_twin, make_optimizer, data, loss_fn)
    assert_as_exact_as_pytorch(got, want, exact)
    for p, q, r in zip(model.parameters(), twin.parameters(), exact_twin.parameters()):
        assert_as_exact_as_pytorch(p.detach(), q.detach(), r.detach())


def test_dropout_masks_are_fresh_every_step_and_change_the_result(backend, rng):
    """Without the masks the losses would differ from eager's: a check that dropout is really
    applied, and that a different seed gives different masks."""
    torch.manual_seed(int(rng.integers(2**31)))
    make_model, make_optimizer, loss_fn = FIXTURES["dropout-adam"]
    model = make_model()
    twin = copy.deepcopy(model)
    data = batches(8, 5)
    step = capture(model, make_optimizer(model), backend)
    step.prepare(*data[0])
    torch.manual_seed(1)
    got = step.steps(data)
    step.dispose()
    torch.manual_seed(2)
    other = eager(twin, make_optimizer(twin), data)
    assert max(abs(a - b) for a, b in zip(got, other)) > 1e-3


@pytest.mark.parametrize("name", ["relu-momentum", "gelu-nesterov-decay", "sigmoid-adam",
                                  "relu-adam-decay-mse", "gelu-adamw", "two-groups-sgd"])
def test_sync_hands_the_state_to_eager_steps_and_to_a_second_capture(name, backend, rng):
    torch.manual_seed(int(rng.integers(2**31)))
    make_model, make_optimizer, loss_fn = FIXTURES[name]
    model = make_model()
    twin = copy.deepcopy(model)
    exact_twin = copy.deepcopy(model).double()
    optimizer = make_optimizer(model)
    data = batches(8, 30, loss_fn)
    step = capture(model, optimizer, backend, loss_fn)
    step.prepare(*data[0])
    first = step.steps(data[:10])            # 10 captured steps,
    step.sync()
    step.dispose()
    middle = eager(model, optimizer, data[10:20], loss_fn)  # 10 eager ones from the synced state,
    again = capture(model, optimizer, backend, loss_fn)
    again.prepare(*data[0])
    last = [again(x, y) for x, y in data[20:]]     # and 10 captured again, one per call
    again.sync()
    again.dispose()
    want = eager(twin, make_optimizer(twin), data, loss_fn)
    exact = eager_float64(exact_twin, make_optimizer, data, loss_fn)
    assert_as_exact_as_pytorch(first + middle + last, want, exact)
    for p, q, r in zip(model.parameters(), twin.parameters(), exact_twin.parameters()):
        assert_as_exact_as_pytorch(p.detach(), q.detach(), r.detach())


def test_what_cannot_be_captured_is_refused_by_name():
    model = mlp(torch.nn.Linear(4, 3))
    with pytest.raises(st.CaptureError, match="RMSprop"):
        st.compile_step(model, F.cross_entropy, torch.optim.RMSprop(model.parameters()))
    with pytest.raises(st.CaptureError, match="amsgrad"):
        st.compile_step(model, F.cross_entropy, torch.optim.Adam(model.parameters(), amsgrad=True))
    groups = [{"params": [model[0].weight]}, {"params": [model[0].bias], "amsgrad": True}]
    with pytest.raises(st.CaptureError, match="amsgrad"):
        st.compile_step(model, F.cross_entropy, torch.optim.Adam(groups, lr=0.1))
    with pytest.raises(st.CaptureError, match="loss"):
        st.compile_step(model, F.l1_loss, torch.optim.SGD(model.parameters(), lr=0.1))
    with pytest.raises(st.CaptureError, match="MSELoss"):
        st.compile_step(model, torch.nn.MSELoss(reduction="sum"),
                        torch.optim.SGD(model.parameters(), lr=0.1))
    with pytest.raises(st.CaptureError, match="in-place dropout"):
        leaky = mlp(torch.nn.Linear(4, 3), torch.nn.Dropout(0.5, inplace=True))
        st.compile_step(leaky, F.cross_entropy, torch.optim.SGD(leaky.parameters(), lr=0.1)).prepare(
            torch.zeros(2, 4), torch.zeros(2, dtype=torch.long))
    odd = mlp(torch.nn.Linear(4, 3), torch.nn.Softplus())
    with pytest.raises(st.CaptureError, match="Softplus"):
        st.compile_step(odd, F.cross_entropy, torch.optim.SGD(odd.parameters(), lr=0.1)).prepare(
            torch.zeros(2, 4), torch.zeros(2, dtype=torch.long))


def test_a_prepared_step_holds_its_optimizer(backend):
    model = mlp(torch.nn.Linear(4, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(2, 4), torch.tensor([0, 2])
    step = st.compile_step(model, F.cross_entropy, optimizer, **backend).prepare(x, y)
    with pytest.raises(st.CaptureError, match="optimizer.step"):
        optimizer.step()
    with pytest.raises(st.CaptureError, match="already captured"):
        st.compile_step(model, F.cross_entropy, optimizer, **backend).prepare(x, y)
    with pytest.raises(st.CaptureError, match="prepared for"):
        step(torch.randn(3, 4), torch.tensor([0, 1, 2]))
    step.dispose()
    optimizer.step()  # its own again
