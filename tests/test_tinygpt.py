"""TinyGPT: config validation, shapes, parameter count against the analytic count, recomputation is exact."""

import dataclasses

import pytest

torch = pytest.importorskip("torch")

from aihw.models.tinygpt import TinyGPT, TinyGPTConfig, random_batch  # noqa: E402

torch.set_num_threads(2)


def test_structure_and_param_count():
    cfg = TinyGPTConfig(width=32, depth=3, heads=4, seq_len=16, vocab=50)
    model = TinyGPT(cfg)
    assert isinstance(model.blocks, torch.nn.ModuleList) and len(model.blocks) == 3
    assert model.head.out.weight is model.embed.tok.weight  # tied
    assert model.num_params() == cfg.shape().param_count()


def test_forward_shapes_and_loss():
    cfg = TinyGPTConfig(width=32, depth=2, heads=2, seq_len=16, vocab=50)
    idx, targets = random_batch(cfg, 3, seq=10)
    logits, loss = TinyGPT(cfg)(idx, targets)
    assert logits.shape == (3, 10, 50)
    assert loss.item() == pytest.approx(torch.log(torch.tensor(50.0)).item(), rel=0.1)  # near-uniform at init


def test_causal():
    cfg = TinyGPTConfig(width=32, depth=2, heads=2, seq_len=16, vocab=50)
    model = TinyGPT(cfg).eval()
    idx, _ = random_batch(cfg, 1)
    changed = idx.clone()
    changed[0, -1] = (changed[0, -1] + 1) % 50
    a, _ = model(idx)
    b, _ = model(changed)
    torch.testing.assert_close(a[:, :-1], b[:, :-1])


@pytest.mark.parametrize("recompute", ["selective", "full"])
def test_recompute_gives_same_gradients(recompute):
    cfg = TinyGPTConfig(width=32, depth=2, heads=4, seq_len=16, vocab=50)
    idx, targets = random_batch(cfg, 2)
    grads = []
    for c in (cfg, dataclasses.replace(cfg, recompute=recompute)):
        torch.manual_seed(0)
        model = TinyGPT(c)
        model(idx, targets)[1].backward()
        grads.append([p.grad for p in model.parameters()])
    for g0, g1 in zip(*grads, strict=True):
        torch.testing.assert_close(g0, g1)


@pytest.mark.parametrize("kwargs, match", [
    (dict(width=30, heads=4), "heads=4 must divide width=30"), (dict(depth=0), "depth"),
    (dict(dropout=1.0), "dropout"), (dict(recompute="some"), "recompute"), (dict(vocab=-1), "vocab"),
])
def test_bad_config(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TinyGPTConfig(**kwargs)


def test_too_long_input():
    cfg = TinyGPTConfig(seq_len=8)
    with pytest.raises(ValueError, match="seq"):
        TinyGPT(cfg)(torch.zeros(1, 9, dtype=torch.long))
    with pytest.raises(ValueError, match="seq"):
        random_batch(cfg, 1, seq=9)
