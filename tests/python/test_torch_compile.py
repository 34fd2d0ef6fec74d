"""torch.compile(model, backend="scellis"): compiled models and functions against PyTorch eager
(float32, the peer) on the CPU reference and on WebGPU (SwiftShader); graph breaks fall back to
PyTorch, are reported once by name, and agree; calls that need autograd run in PyTorch."""
import warnings

import pytest
import torch
import torch.nn.functional as F

import scellis.torch as st

TOL = {"rtol": 1e-5, "atol": 1e-5}


@pytest.fixture
def options(backend):
    torch._dynamo.reset()
    return {"tier": "prod", **backend}


@pytest.fixture
def seeded(rng):
    torch.manual_seed(int(rng.integers(2**31)))


def test_the_backend_is_registered_by_the_entry_point():
    assert "scellis" in torch._dynamo.list_backends()


@pytest.mark.parametrize("activation", [torch.nn.ReLU, torch.nn.GELU, torch.nn.Tanh, torch.nn.Sigmoid])
def test_an_mlp_matches_eager(options, seeded, activation):
    model = torch.nn.Sequential(torch.nn.Linear(12, 32), activation(), torch.nn.Linear(32, 7),
                                torch.nn.LogSoftmax(dim=-1)).eval()
    x = torch.randn(9, 12)
    compiled = torch.compile(model, backend="scellis", options=options)
    with torch.no_grad():
        got = compiled(x)
        want = model(x)
        again = compiled(torch.randn(9, 12) * 0 + x)  # a second call reuses the session
    torch.testing.assert_close(got, want, **TOL)
    torch.testing.assert_close(again, want, **TOL)
    report = st.last_report()
    assert report["subgraphs"] == 1 and report["breaks"] == {}
    assert report["backend"] == options["backend"] and report["fallback_reason"] is None


def test_functions_of_every_translated_op_match_eager(options, seeded):
    def f(a, b, c, w):
        y = (a + 1.5) * b - a / (b.abs() + 1)           # abs is not translated: a break
        z = torch.matmul(c, w).transpose(-1, -2)          # batched matmul, transpose
        s = z.sum(dim=1, keepdim=True) + z.mean(-1).unsqueeze(1).permute(0, 2, 1).reshape(z.shape[0], 1, -1).mean(-1, keepdim=True)
        m = torch.maximum(a, b) - torch.minimum(a, b * 0.25)
        e = torch.exp(-a).sqrt() + torch.log(b * b + 1) + torch.tanh(a) + torch.sigmoid(b)
        return y, s.view(-1), m.t(), F.softmax(e, dim=0), -e

    a, b = torch.randn(4, 6), torch.randn(4, 6)
    c, w = torch.randn(3, 5, 4), torch.randn(4, 2)
    compiled = torch.compile(f, backend="scellis", options=options)
    with torch.no_grad(), warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        got = compiled(a, b, c, w)
    for g, want in zip(got, f(a, b, c, w)):
        torch.testing.assert_close(g, want, **TOL)
    report = st.last_report()
    assert report["subgraphs"] >= 1
    assert any("abs" in name for name in report["breaks"]), report["breaks"]


def test_masks_and_clamps_match_eager(options, seeded):
    """The version-3 ops through torch.compile: comparisons (operators, reflected scalars,
    functions), where, masked_fill, clamp and its spellings, casts between bool and float32, and
    a causal attention mask; bool outputs come back as torch.bool."""
    def f(x, y, scores):
        keep = (x > 0) & (y < 1)                       # & of bools is not translated: a break
        m = torch.where(x >= y, x, y * 2) + x.masked_fill(x.lt(-0.5), 0.0)
        c = torch.clamp(x, -1.0, 0.5) + x.clamp(min=0.0) + F.hardtanh(y) + F.relu6(y * 4) + torch.clamp_max(x, 0.1)
        causal = torch.ones(scores.shape[-2:]).tril() == 0
        attn = F.softmax(scores.masked_fill(causal, -1e9), dim=-1)
        return keep, m, c, (0.0 < x).float() + y.gt(x).to(torch.float32), attn, x.ne(y)

    x, y, scores = torch.randn(4, 6), torch.randn(4, 6), torch.randn(2, 5, 5)
    x[0, 0], y[0, 0] = float("nan"), 1.0
    compiled = torch.compile(f, backend="scellis", options=options)
    with torch.no_grad(), warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        got = compiled(x, y, scores)
    for g, want in zip(got, f(x, y, scores)):
        assert g.dtype == want.dtype
        torch.testing.assert_close(g, want, equal_nan=True, **TOL)
    assert st.last_report()["subgraphs"] >= 1


def test_slices_flips_and_pads_match_eager(options, seeded):
    def f(x, y):
        a = x[1:, ::2] * 2 + x[..., :3].flip(0)[:, ::2].sum()   # torch has no negative steps
        b = torch.flip(y, [0, 1]) + F.pad(y[:, 1:], (1, 0), value=0.5)
        c = torch.narrow(x, 1, 2, 3) - x.select(0, 1)[2:5]
        return a, b, c, x[-1], F.pad(x, (0, 1, 2, 0))

    x, y = torch.randn(5, 7), torch.randn(3, 4)
    compiled = torch.compile(f, backend="scellis", options=options)
    with torch.no_grad():
        got = compiled(x, y)
    for g, want in zip(got, f(x, y)):
        torch.testing.assert_close(g, want, **TOL)
    report = st.last_report()
    assert report["subgraphs"] >= 1 and not report["breaks"], report


def test_an_unsupported_op_is_a_graph_break_reported_once_and_the_answer_agrees(options, seeded):
    def f(x):
        h = torch.relu(x @ x.T)
        h = torch.cumsum(h, dim=1)        # no Scellis op: runs in PyTorch
        return F.gelu(h / 10, approximate="tanh") + h.mean()

    x = torch.randn(5, 5)
    compiled = torch.compile(f, backend="scellis", options=options)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        st._reported_breaks.clear()
        got = compiled(x)
        compiled(x)
    torch.testing.assert_close(got, f(x), **TOL)
    breaks = st.last_report()["breaks"]
    assert any("cumsum" in n for n in breaks), breaks
    assert any("gelu" in n and "approximate" in why for n, why in breaks.items()), breaks
    cumsum_warnings = [w for w in caught if "cumsum" in str(w.message)]
    assert len(cumsum_warnings) == 1, [str(w.message) for w in caught]


def test_calls_that_need_gradients_run_in_pytorch(options, seeded):
    model = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    x = torch.randn(3, 6)
    compiled = torch.compile(model, backend="scellis", options=options)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        out = compiled(x).sum()
    out.backward()
    want = model(x).sum()
    torch.testing.assert_close(out, want, **TOL)
    assert all(p.grad is not None for p in model.parameters())


def test_unknown_options_are_refused_by_name():
    torch._dynamo.reset()
    compiled = torch.compile(lambda x: x + 1, backend="scellis", options={"teir": "prod"})
    with pytest.raises(Exception, match="unknown options"):
        compiled(torch.ones(2))


def test_a_graph_of_the_same_content_reuses_its_session_and_feeds_its_own_weights(options, seeded):
    """Two models of one architecture compile to subgraphs of one content (their weights are
    inputs): once Dynamo's own cache is reset, so that the backend is asked again, the second
    reuses the prepared session, and each still gets its own answer."""
    first, second = (torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh()).eval()
                     for _ in range(2))
    x = torch.randn(3, 6)
    with torch.no_grad():
        got_first = torch.compile(first, backend="scellis", options=options)(x)
        assert st.last_report()["cached"] == 0
        subgraphs = st.last_report()["subgraphs"]
        torch._dynamo.reset()
        got_second = torch.compile(second, backend="scellis", options=options)(x)
        assert st.last_report()["cached"] == subgraphs >= 1
        torch.testing.assert_close(got_first, first(x), **TOL)
        torch.testing.assert_close(got_second, second(x), **TOL)
