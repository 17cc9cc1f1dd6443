"""Numbers the chapters teach, checked against their sources (each test names the page that states it)."""

from __future__ import annotations

import pytest

from aihw.transformer import flops
from aihw.transformer.shapes import get_preset


def _decode_attention(name: str, batch: int = 1, context: int = 8192) -> float:
    ops = flops.layer_intensities(get_preset(name), batch=batch, new_tokens=1, context=context)
    return {o.op: o.intensity for o in ops}["scores Q·Kᵀ"]


def test_decode_attention_intensity_follows_the_gqa_group():
    # transformer_math.md, exercise tm-ex-design (c): Llama-3-8B has 32 query heads and 8 KV heads, so each
    # key read serves 4 heads: 2·4·d FLOP per 2·d bytes of keys, less the score write, ≈ 3.9 FLOP/byte.
    l3 = get_preset("llama-3-8b")
    assert (l3.heads, l3.kv_heads) == (32, 8)
    assert _decode_attention("llama-3-8b") == pytest.approx(3.9, abs=0.05)
    assert _decode_attention("llama-3-8b", batch=32) == pytest.approx(_decode_attention("llama-3-8b"))
    # without GQA (Llama-2-7B, one KV head per query head) it is about 1
    assert _decode_attention("llama-2-7b") == pytest.approx(1.0, abs=0.02)


def _bandwidth_only_link():
    from aihw.comm.collectives import LinkModel

    return LinkModel(alpha_s=0.0, bandwidth_bytes_per_s=1e9)


@pytest.mark.parametrize("p", [2, 8, 64, 1024])
def test_zero3_moves_one_and_a_half_times_data_parallel(p):
    # planning.md, exercise planning-ex-design (b): ZeRO-3 = two parameter all-gathers + one gradient
    # reduce-scatter; data parallelism (and ZeRO-1/2) = one all-reduce = one reduce-scatter + one all-gather.
    from aihw.comm.collectives import all_gather_time, all_reduce_time, reduce_scatter_time

    link, n = _bandwidth_only_link(), 1e9
    dp = all_reduce_time(n, p, link=link)
    zero12 = reduce_scatter_time(n, p, link=link) + all_gather_time(n, p, link=link)
    zero3 = 2 * all_gather_time(n, p, link=link) + reduce_scatter_time(n, p, link=link)
    assert zero12 == pytest.approx(dp)
    assert zero3 / dp == pytest.approx(1.5)


@pytest.mark.parametrize("p", [2, 8, 1024])
def test_ring_all_reduce_sends_almost_twice_the_gradient(p):
    # data_parallel.md: a ring all-reduce sends 2(p-1)/p times the buffer per GPU: 1 at p = 2, -> 2 as p grows
    from aihw.comm.collectives import all_reduce_terms

    factor = all_reduce_terms(p, "ring")[1]
    assert factor == pytest.approx(2 * (p - 1) / p)
    assert 1.0 <= factor < 2.0
    if p >= 8:
        assert factor >= 1.75


def test_tp_hidden_size_bounds_and_where_7b_models_fall():
    # planning.md, exercise planning-ex-tp: h >= (t-1)F/(3W) is ~5,100 over NVLink and ~46,000 over NDR at t = 8;
    # 7-8B models have h = 4,096, below the NVLink bound; Llama-3-70B (h = 8,192) lies between the two.
    from aihw.comm.roofline import critical_intensity, tp_condition

    assert 7 * critical_intensity("H100 SXM", "chip") / 3 == pytest.approx(5100, rel=0.02)
    assert 7 * critical_intensity("H100 SXM", "InfiniBand NDR") / 3 == pytest.approx(46000, rel=0.02)
    for name in ("llama-2-7b", "llama-3-8b", "mistral-7b"):
        assert get_preset(name).hidden == 4096
        assert tp_condition(name, 8, "H100 SXM", "chip").ratio < 1
    assert tp_condition("llama-3-70b", 8, "H100 SXM", "chip").ratio > 1
    assert tp_condition("llama-3-70b", 8, "H100 SXM", "InfiniBand NDR").ratio < 1


def test_llama3_table4_throughput_is_model_flops():
    # planning.md: Llama 3's Table 4 prints TFLOPs/GPU beside "BF16 MFU" 43%, 41%, 38% (Dubey et al. 2024);
    # MFU (Chowdhery et al. 2022, App. B) excludes recomputation, so the figures are model FLOP/s and are
    # compared with the planner's model-FLOPs prediction.
    from aihw.catalogue.hardware import get_chip
    from aihw.planning import published

    peak = get_chip("NVIDIA H100 SXM").peak_flops("bf16")
    mfu = [0.43, 0.41, 0.38]
    for run, m in zip(published.LLAMA3_RUNS, mfu, strict=True):
        assert run.convention == "model"
        assert run.published_tflops * 1e12 / peak == pytest.approx(m, abs=0.006)


def test_llama3_8b_needs_two_v5e_chips():
    # inference.md, worked examples: 16 GB of bf16 weights do not fit in one v5e's 16 GB of HBM; two hold them and
    # batch 32 x 2,048 tokens of KV cache (the course's serving calculator, not a typed "four").
    from aihw.serving import estimate_serving

    def fits(tp):
        return estimate_serving("llama-3-8b", chip="TPU v5e", batch=32, context=2048, prompt=1024, tp=tp).fits

    assert not fits(1) and fits(2)


def test_llama3_8b_decode_at_512_tokens_has_no_knee():
    # inference.md renders "never turns compute-bound" from knee_batch None (once printed as "batch 0"):
    # per sequence, 512 tokens of KV cache take longer to read than its token's FLOPs take on an H100.
    from aihw.serving import estimate_serving

    e = estimate_serving("llama-3-8b", chip="H100 SXM", batch=1, context=512)
    assert e.knee_batch is None
    assert estimate_serving("llama-3-8b", chip="H100 SXM", batch=1, context=128).knee_batch is not None


@pytest.mark.parametrize("w", [1.0, 1.5, 1.99, 0.02, 0.75, 3.0])
def test_bf16_half_ulp_is_between_w_2_to_minus_9_and_minus_8(w):
    # labs/formats_lab.py: half an ulp of w in bf16 (8 significant bits) is 2^(floor(log2|w|) - 8)
    import math

    from aihw.formats import numerics

    half = numerics.half_ulp_threshold(w, "bf16")
    assert half == 2.0 ** (math.floor(math.log2(abs(w))) - 8)
    assert abs(w) * 2**-9 < half <= abs(w) * 2**-8
