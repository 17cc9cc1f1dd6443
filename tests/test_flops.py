"""The one FLOP model: both attention matmuls counted, checked by counting a real forward pass's matmuls."""

import pytest

from aihw.transformer.flops import (
    flops_per_token,
    forward_flops_per_token,
    matmul_params,
    model_flops_per_token,
)
from aihw.transformer.shapes import ModelShape, get_preset

# Attention-heavy on purpose: a narrow model at a long context, where the two attention matmuls are most of it.
LONG = ModelShape("long-context", hidden=64, layers=2, heads=4, vocab=32, max_seq=4096)


def test_attention_counts_both_matmuls_and_dominates_at_long_context():
    f = forward_flops_per_token(LONG, 4096)
    # Q K^T: 2*s*h per layer; A V: 2*s*h per layer -> 4*L*s*h.
    assert f.attention == 4 * LONG.layers * 4096 * LONG.hidden
    assert f.attention_share > 0.9, f.attention_share
    # Dropping either attention matmul (or the whole term) changes the total by far more than any tolerance.
    total = f.training
    assert abs(3 * (f.dense + f.attention / 2) - total) / total > 0.4
    assert abs(3 * f.dense - total) / total > 0.9


def test_dense_term_is_two_flop_per_matmul_weight_and_6n_for_a_real_model():
    m = get_preset("llama-2-7b")
    assert forward_flops_per_token(m, 1).dense == 2 * matmul_params(m)
    # 6N (Kaplan) is within a few percent of the counted training FLOPs at short context for a 7B model.
    ratio = flops_per_token(m, 128) / (6 * m.param_count())
    assert 0.97 < ratio < 1.03, ratio


def test_causal_halves_the_attention_term_and_recompute_adds_forward_work():
    full, causal = forward_flops_per_token(LONG, 1000), forward_flops_per_token(LONG, 1000, causal=True)
    assert causal.attention == pytest.approx(full.attention * 1001 / 2000)
    base = model_flops_per_token(LONG, 1000)
    assert flops_per_token(LONG, 1000, recompute="selective") == pytest.approx(base + full.attention)
    assert flops_per_token(LONG, 1000, recompute="full") > flops_per_token(LONG, 1000, recompute="selective")
    assert flops_per_token(LONG, 1000, training=False) == pytest.approx(base / 3)


@pytest.mark.parametrize("bad", [0, -1, 2.5])
def test_bad_sequence_length_is_one_clear_error(bad):
    with pytest.raises(ValueError, match="seq"):
        forward_flops_per_token(LONG, bad)
    with pytest.raises(ValueError, match="recompute"):
        flops_per_token(LONG, 8, recompute="sometimes")


@pytest.mark.parametrize("hidden,layers,heads,published", [(12288, 96, 96, 2.7), (20480, 105, 128, 1.6)])
def test_selective_recompute_reproduces_korthikanti_figures(hidden, layers, heads, published):
    """Korthikanti et al. 2022 quote 2.7% (GPT-3) and 1.6% (MT-NLG): s/(6h+s) of the forward pass."""
    from aihw.planning.published import megatron_gpt

    shape = megatron_gpt("m", hidden, layers, heads)
    fwd = forward_flops_per_token(shape, 2048)
    assert round(100 * fwd.attention / fwd.forward, 1) == published
    assert fwd.attention / fwd.forward == pytest.approx(2048 / (6 * hidden + 2048), rel=0.02)
    extra = flops_per_token(shape, 2048, recompute="selective") - flops_per_token(shape, 2048)
    assert extra == pytest.approx(fwd.attention)  # one more pass of the attention core per token
