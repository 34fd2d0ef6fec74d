"""scellis.torch.compile_step: a captured training step (forward, cross-entropy, one backward that
Scellis derives itself, one optimizer step) against the same model trained eagerly by PyTorch
2.11 from the same weights and batches — losses and weights after 20 steps to float32 rounding,
on the CPU reference and on SwiftShader; state written back by sync() so eager training (and a
second capture) continue exactly; what cannot be captured is refused by name."""
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


FIXTURES = {
    "relu-sgd": (lambda: mlp(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)),
                 lambda p: torch.optim.SGD(p, lr=0.1)),
    "relu-momentum": (lambda: mlp(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)),
                      lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9)),
    "gelu-nesterov-decay": (lambda: mlp(torch.nn.Linear(10, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)),
                            lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3)),
    "tanh-dampening": (lambda: mlp(torch.nn.Linear(10, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4)),
                       lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.5, dampening=0.1)),
    "sigmoid-adam": (lambda: mlp(torch.nn.Linear(10, 16), torch.nn.Sigmoid(), torch.nn.Linear(16, 4)),
                     lambda p: torch.optim.Adam(p, lr=1e-2)),
    "relu-adam-decay": (lambda: mlp(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)),
                        lambda p: torch.optim.Adam(p, lr=5e-3, betas=(0.8, 0.99), weight_decay=1e-2)),
    "gelu-adamw": (lambda: mlp(torch.nn.Linear(10, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)),
                   lambda p: torch.optim.AdamW(p, lr=1e-2)),
    "deep-adam": (lambda: mlp(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 16),
                              torch.nn.Tanh(), torch.nn.Linear(16, 4)),
                  lambda p: torch.optim.Adam(p, lr=1e-2)),
    "functional-relu-sgd": (FunctionalMlp, lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.8)),
    "no-bias-adamw": (lambda: mlp(torch.nn.Linear(10, 16, bias=False), torch.nn.ReLU(), torch.nn.Linear(16, 4)),
                      lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.1)),
}


def batches(n, steps=20):
    return [(torch.randn(n, 10), torch.randint(0, 4, (n,))) for _ in range(steps)]


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


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_twenty_captured_steps_match_pytorch(name, backend, rng):
    torch.manual_seed(int(rng.integers(2**31)))
    make_model, make_optimizer = FIXTURES[name]
    model = make_model()
    twin = copy.deepcopy(model)
    data = batches(8)
    step = capture(model, make_optimizer(model.parameters()), backend,
                   loss_fn=torch.nn.CrossEntropyLoss() if "adam" in name else F.cross_entropy)
    step.prepare(*data[0])
    assert step.backend == backend["backend"]
    got = step.steps(data)
    step.sync()
    step.dispose()
    want = eager(twin, make_optimizer(twin.parameters()), data)
    torch.testing.assert_close(torch.tensor(got), torch.tensor(want), **TOL)
    for p, q in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(p, q, **TOL)


@pytest.mark.parametrize("name", ["relu-momentum", "gelu-nesterov-decay", "sigmoid-adam",
                                  "relu-adam-decay", "gelu-adamw", "functional-relu-sgd"])
def test_sync_hands_the_state_to_eager_steps_and_to_a_second_capture(name, backend, rng):
    torch.manual_seed(int(rng.integers(2**31)))
    make_model, make_optimizer = FIXTURES[name]
    model = make_model()
    twin = copy.deepcopy(model)
    optimizer = make_optimizer(model.parameters())
    data = batches(8, 30)
    step = capture(model, optimizer, backend)
    step.prepare(*data[0])
    first = step.steps(data[:10])            # 10 captured steps,
    step.sync()
    step.dispose()
    middle = eager(model, optimizer, data[10:20])  # 10 eager ones from the synced state,
    again = capture(model, optimizer, backend)
    again.prepare(*data[0])
    last = [again(x, y) for x, y in data[20:]]     # and 10 captured again, one per call
    again.sync()
    again.dispose()
    want = eager(twin, make_optimizer(twin.parameters()), data)
    torch.testing.assert_close(torch.tensor(first + middle + last), torch.tensor(want), **TOL)
    for p, q in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(p, q, **TOL)


def test_what_cannot_be_captured_is_refused_by_name():
    model = mlp(torch.nn.Linear(4, 3))
    with pytest.raises(st.CaptureError, match="RMSprop"):
        st.compile_step(model, F.cross_entropy, torch.optim.RMSprop(model.parameters()))
    with pytest.raises(st.CaptureError, match="amsgrad"):
        st.compile_step(model, F.cross_entropy, torch.optim.Adam(model.parameters(), amsgrad=True))
    groups = [{"params": [model[0].weight]}, {"params": [model[0].bias], "lr": 0.5}]
    with pytest.raises(st.CaptureError, match="parameter group"):
        st.compile_step(model, F.cross_entropy, torch.optim.SGD(groups, lr=0.1))
    with pytest.raises(st.CaptureError, match="maximize"):
        st.compile_step(model, F.cross_entropy, torch.optim.SGD(model.parameters(), lr=0.1, maximize=True))
    with pytest.raises(st.CaptureError, match="loss"):
        st.compile_step(model, F.mse_loss, torch.optim.SGD(model.parameters(), lr=0.1))
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
