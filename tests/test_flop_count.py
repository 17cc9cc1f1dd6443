import pytest

pytest.importorskip("torch")

from aihw.measure.flops import count_training_step  # noqa: E402
from aihw.models.tinygpt import TinyGPTConfig  # noqa: E402
from aihw.transformer import flops  # noqa: E402


def test_counted_training_flops_match_the_flop_model():
    """FlopCounterMode counts every matmul of a real step: aihw.transformer.flops (both attention matmuls) must match it."""
    cfg = TinyGPTConfig(width=128, depth=2, heads=4, seq_len=32)
    step = count_training_step(cfg, batch=2, repeats=1)
    predicted = flops.model_flops_per_token(cfg.shape(), cfg.seq_len) * step.tokens
    assert step.counted_flops == pytest.approx(predicted, rel=1e-3)
    assert step.forward_flops * 3 == pytest.approx(step.counted_flops, rel=1e-6)  # backward = 2 x forward
    assert step.seconds > 0 and step.achieved_flops_per_s > 0


def test_bad_batch():
    with pytest.raises(ValueError, match="batch"):
        count_training_step(TinyGPTConfig(), batch=0)
