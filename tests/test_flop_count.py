import pytest

pytest.importorskip("torch")

from aihw import scaling  # noqa: E402
from aihw.measure.flops import count_training_step  # noqa: E402
from aihw.models.tinygpt import TinyGPTConfig  # noqa: E402


def test_counted_training_flops_match_6n_plus_attention():
    cfg = TinyGPTConfig(width=128, depth=2, heads=4, seq_len=32)
    step = count_training_step(cfg, batch=2, repeats=1)
    n = step.non_embedding_params + cfg.vocab * cfg.width
    predicted = scaling.flops_per_token(n, seq=cfg.seq_len, layers=cfg.depth, hidden=cfg.width) * step.tokens
    assert step.counted_flops == pytest.approx(predicted, rel=0.05)
    assert step.forward_flops * 3 == pytest.approx(step.counted_flops, rel=1e-6)  # backward = 2 x forward
    assert step.seconds > 0 and step.achieved_flops_per_s > 0


def test_bad_batch():
    with pytest.raises(ValueError, match="batch"):
        count_training_step(TinyGPTConfig(), batch=0)
