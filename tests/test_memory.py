"""The analytic memory estimator: parameter counts, per-component bytes, sharding, fit, CLI and bad input."""

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aihw.memory.estimator import (
    COMPONENTS,
    MemoryConfig,
    activation_bytes_per_layer,
    estimate,
    estimate_memory,
    korthikanti_per_layer,
)
from aihw.memory.fit import devices_needed
from aihw.transformer.shapes import PRESETS, ModelShape, get_preset, resolve_model

# Published counts are rounded, so compare within 1%. GPT-2's paper (Radford et al. 2019, Table 2) prints
# 117M/345M/762M/1542M, below the released checkpoints' 124.4M/354.8M/774.0M/1557.6M (by 6.4%, 2.8%, 1.6%, 1.0%).
TOLERANCE = {"gpt2-small": 0.07, "gpt2-medium": 0.03, "gpt2-large": 0.02, "gpt2-xl": 0.015}


def test_gpt2_published_counts_are_the_papers():
    assert [PRESETS[n].published_params for n in ("gpt2-small", "gpt2-medium", "gpt2-large", "gpt2-xl")] == [
        117e6, 345e6, 762e6, 1542e6]


@pytest.mark.parametrize("name", list(PRESETS))
def test_preset_parameter_counts_match_published(name):
    m = PRESETS[name]
    assert m.param_count() == pytest.approx(m.published_params, rel=TOLERANCE.get(name, 0.01))
    assert m.source.startswith("https://huggingface.co/")


def test_exact_parameter_counts():
    # Exact values as printed by summing tensor sizes of the Hugging Face checkpoints.
    assert get_preset("gpt2-small").param_count() == 124_439_808
    assert get_preset("llama-2-7b").param_count() == 6_738_415_616
    assert get_preset("llama-3-8b").param_count() == 8_030_261_248
    assert get_preset("mistral-7b").param_count() == 7_241_732_096
    assert get_preset("llama-2-70b").attention_kind == "GQA"


def test_seed_table_cells():
    # 7B fp16: weights + fp16 gradients, plain SGD, no master copy, no activations -> 28 GB / 14 GB.
    train = estimate_memory(params=7e9, precision="fp16", optimizer="sgd", master_weights=False)
    serve = estimate_memory(params=7e9, precision="fp16", mode="infer")
    assert train.total_bytes == pytest.approx(28e9) and serve.total_bytes == pytest.approx(14e9)
    # 13B int8: int8 weights + 16-bit gradients -> 39 GB (the source rounds to 40); serving 13 GB of weights.
    assert estimate_memory(params=13e9, precision="int8", optimizer="sgd",
                           master_weights=False).total_bytes == pytest.approx(39e9)
    assert estimate_memory(params=13e9, precision="int8", mode="infer").total_bytes == pytest.approx(13e9)
    # 70B fp16 -> 280 GB / 140 GB.
    assert estimate_memory(params=70e9, precision="fp16", optimizer="sgd",
                           master_weights=False).total_bytes == pytest.approx(280e9)


def test_mixed_precision_adamw_is_16_bytes_per_param():
    e = estimate_memory(params=1e9, precision="bf16", optimizer="adamw")
    assert e.total["weights"] == 2e9 and e.total["gradients"] == 2e9
    assert e.total["optimizer"] == 8e9 and e.total["master_weights"] == 4e9 and e.total_bytes == 16e9
    fp32 = estimate_memory(params=1e9, precision="fp32", optimizer="adam")
    assert fp32.total["master_weights"] == 0 and fp32.total_bytes == 16e9
    assert estimate_memory(params=1e9, precision="bf16", optimizer="sgd_momentum").total["optimizer"] == 4e9
    assert 2e9 < estimate_memory(params=1e9, optimizer="adam8bit").total["optimizer"] < 2.01e9
    assert estimate_memory(params=1e9, precision="int4", mode="infer").total_bytes == 0.5e9


def test_korthikanti_formula_reproduced():
    kw = dict(seq=2048, batch=4, hidden=4096, heads=32)
    for rc in ("none", "selective", "full"):
        assert activation_bytes_per_layer(**kw, recompute=rc) == pytest.approx(korthikanti_per_layer(**kw, recompute=rc))
    s, b, h, a, t = 2048, 4, 4096, 32, 8
    no_sp = activation_bytes_per_layer(**kw, tp=t, sequence_parallel=False)
    assert no_sp == pytest.approx(s * b * h * (10 + 24 / t + 5 * a * s / (h * t)))
    assert activation_bytes_per_layer(**kw, tp=t) == pytest.approx(s * b * h * (34 + 5 * a * s / h) / t)


def test_kv_cache_mha_gqa_mqa():
    base = dict(hidden=4096, layers=32, heads=32, vocab=32000, max_seq=4096)
    sizes = {}
    for kv in (32, 8, 1):
        m = ModelShape(f"m{kv}", **base, kv_heads=kv, gated_mlp=True, ffn=11008)
        sizes[kv] = estimate_memory(m, mode="infer", batch=2, seq=4096).total["kv_cache"]
    assert sizes[32] == 2 * 32 * 32 * 128 * 4096 * 2 * 2  # K and V, layers, heads, head_dim, tokens, batch, bytes
    assert sizes[8] == sizes[32] / 4 and sizes[1] == sizes[32] / 32
    assert estimate_memory("llama-2-7b", mode="infer", kv_precision="fp8_e4m3").total["kv_cache"] > 0


def test_zero_stages_shard_what_the_paper_says():
    cfg = MemoryConfig(params=1e9, precision="bf16", dp=4)
    per = {z: estimate(dataclasses.replace(cfg, zero=z)).per_device for z in range(4)}
    assert per[0]["optimizer"] == 8e9 and per[1]["optimizer"] == 2e9 and per[1]["master_weights"] == 1e9
    assert per[1]["gradients"] == 2e9 and per[2]["gradients"] == 0.5e9
    assert per[2]["weights"] == 2e9 and per[3]["weights"] == 0.5e9


def test_tensor_and_pipeline_split():
    one = estimate_memory("llama-2-7b", seq=1024)
    split = estimate_memory("llama-2-7b", seq=1024, tp=4, pp=2)
    assert split.per_device["weights"] < one.total["weights"] / 7
    assert split.per_device["activations"] == pytest.approx(one.total["activations"] / 4, rel=1e-9)
    assert split.devices == 8 and one.total == split.total


def test_devices_needed_and_h100():
    cfg = MemoryConfig(model=resolve_model("llama-2-70b"), seq=4096, recompute="full")
    assert devices_needed(cfg, 80e9, zero=0) is None  # plain data parallelism never shards model state
    n3 = devices_needed(cfg, 80e9, zero=3)
    assert n3 is not None and estimate(dataclasses.replace(cfg, dp=n3, zero=3)).per_device_bytes <= 80e9
    assert estimate(dataclasses.replace(cfg, dp=n3 - 1, zero=3)).per_device_bytes > 80e9
    assert devices_needed(MemoryConfig(model=resolve_model("llama-2-7b"), mode="infer", seq=4096), 80e9) == 1
    assert devices_needed(MemoryConfig(model=resolve_model("llama-2-70b"), mode="infer", seq=4096), 80e9) == 2


def test_fit_table_uses_catalogue():
    from aihw.memory.fit import fit_table

    rows = fit_table(MemoryConfig(model=resolve_model("llama-2-7b"), mode="infer", batch=4), ["h100-sxm", "t4"])
    assert rows[0]["fits_one"] and not rows[1]["fits_one"] and rows[1]["devices"]["tp/pp"] >= 2


@pytest.mark.parametrize("kwargs, match", [
    (dict(params=0), "params"), (dict(params=-5), "params"), (dict(model="llama2-7b"), "llama-2-7b"),
    (dict(model="gpt2-small", tp=5), "tp=5"), (dict(model="gpt2-small", pp=13), "pp=13 stages exceed the 12 layers"),
    (dict(params=1e9, zero=4), "zero"), (dict(params=1e9, batch=0), "batch"), (dict(params=1e9, precision="fp12"),
                                                                                "precision"),
    (dict(), "exactly one"), (dict(model=ModelShape("g", 768, 2, 12, vocab=9, max_seq=8, kv_heads=4), tp=6), "kv_heads=4"),
])
def test_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        if isinstance(kwargs.get("model"), str):  # preset names become shapes at the boundary
            kwargs = {**kwargs, "model": resolve_model(kwargs["model"])}
        MemoryConfig(**kwargs)


def test_bad_shape():
    with pytest.raises(ValueError, match="heads=5 must divide hidden=64"):
        ModelShape("x", 64, 2, 5, vocab=10, max_seq=8)


@settings(max_examples=60, deadline=None)
@given(p=st.floats(1e6, 1e12), more=st.floats(1.0, 10.0), zero=st.integers(0, 3), dp=st.integers(1, 512),
       precision=st.sampled_from(["fp32", "bf16", "int8", "int4"]), mode=st.sampled_from(["train", "infer"]))
def test_properties_params_only(p, more, zero, dp, precision, mode):
    cfg = MemoryConfig(params=p, precision=precision, mode=mode, zero=zero, dp=dp)
    e = estimate(cfg)
    assert estimate(dataclasses.replace(cfg, params=p * more)).per_device_bytes >= e.per_device_bytes
    assert e.per_device_bytes <= e.total_bytes * (1 + 1e-12)
    if zero < 3:
        assert estimate(dataclasses.replace(cfg, zero=zero + 1)).per_device_bytes <= e.per_device_bytes * (1 + 1e-12)


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(list(PRESETS)), zero=st.integers(0, 3), dp=st.integers(1, 64),
       tp=st.sampled_from([1, 2, 4, 8]), pp=st.sampled_from([1, 2, 4]), batch=st.integers(1, 8),
       seq=st.integers(1, 4096), recompute=st.sampled_from(["none", "selective", "full"]),
       mode=st.sampled_from(["train", "infer"]))
def test_properties_presets(name, zero, dp, tp, pp, batch, seq, recompute, mode):
    m = PRESETS[name]
    if m.heads % tp or m.layers % pp or (m.n_kv_heads % tp and tp % m.n_kv_heads):
        return
    seq = min(seq, m.max_seq)  # a learned position table (GPT-2) has no rows beyond max_seq: refused
    cfg = MemoryConfig(model=m, zero=zero, dp=dp, tp=tp, pp=pp, batch=batch, seq=seq, recompute=recompute,
                       mode=mode)
    e = estimate(cfg)
    assert e.per_device_bytes <= e.total_bytes * (1 + 1e-12)
    deeper = dataclasses.replace(m, layers=m.layers * 2)  # more parameters (and layers) never need less
    assert estimate(dataclasses.replace(cfg, model=deeper)).per_device_bytes >= e.per_device_bytes
    if zero < 3:
        assert estimate(dataclasses.replace(cfg, zero=zero + 1)).per_device_bytes <= e.per_device_bytes * (1 + 1e-12)


def test_largest_preset_with_every_split_estimates():
    # (its speed, <= 1 ms per estimate, is printed by bench/bench_memory.py, not timed here)
    e = estimate_memory("llama-3-70b", zero=3, dp=8, tp=8, pp=4, seq=8192, recompute="selective")
    assert 0 < e.per_device_bytes < e.total_bytes


def _cli(argv, capsys):
    try:
        from aihw.cli import main
    except ImportError:  # pragma: no cover - before the CLI exists
        pytest.skip("aihw.cli not available")
    code = main(argv)
    return code, capsys.readouterr()


def test_cli_json(capsys):
    code, out = _cli(["memory", "--model", "llama-2-7b", "--mode", "infer", "--batch", "8", "--seq", "4096",
                      "--chip", "h100-sxm", "--json"], capsys)
    data = json.loads(out.out)
    assert code == 0 and set(COMPONENTS[:6]) <= set(data["breakdown"])
    assert data["total_bytes"] == pytest.approx(sum(data["breakdown"].values()))
    assert data["per_device_bytes"] > 0 and data["assumptions"] and data["fit"]["fits"]


def test_cli_table_and_errors(capsys):
    code, out = _cli(["memory", "--params", "7e9", "--precision", "fp16", "--optimizer", "sgd", "--no-master"],
                     capsys)
    assert code == 0 and "GiB" in out.out and "28.00" in out.out
    for argv, word in ((["--model", "gpt3"], "gpt2"), (["--params", "1e9", "--zero", "5"], "zero"),
                       (["--model", "llama-2-7b", "--tp", "3"], "tp=3"), (["--params", "0"], "params"),
                       (["--params", "1e9", "--mode", "serve"], "mode")):
        code, out = _cli(["memory", *argv], capsys)
        assert code == 2 and word in out.err and len(out.err.strip().splitlines()) == 1


@pytest.mark.parametrize("precision, grad, replicated, sharded", [
    ("bf16", "param", 16, 12),  # the ZeRO paper's accounting: 2 + 2 + 12 (ZeRO-1: 4 + 12/d)
    ("bf16", "fp32", 18, 12),  # Megatron-LM distributed optimizer: 6 + 12/d
    ("fp16", "fp32", 20, 16),  # 4 + 16/d: the fp32 main gradient is sharded with the optimizer
    ("fp32", "fp32", 16, 8),  # 8 + 8/d
])
def test_gradient_precision_matches_megatron_table(precision, grad, replicated, sharded):
    d = 8
    cfg = MemoryConfig(params=1e9, precision=precision, grad_precision=grad, dp=d)
    state = ("weights", "gradients", "optimizer", "master_weights")
    assert sum(estimate(cfg).total[k] for k in state) / 1e9 == pytest.approx(replicated)
    zero1 = estimate(dataclasses.replace(cfg, zero=1)).per_device
    assert sum(zero1[k] for k in state) / 1e9 == pytest.approx(replicated - sharded + sharded / d)


def test_zero3_gather_buffers_and_keep_gathered():
    base = MemoryConfig(model="llama-2-7b", seq=1024, zero=3, dp=8)
    sharded = estimate(base).per_device["weights"]
    layer = get_preset("llama-2-7b").layer_params() * 2  # bf16
    assert sharded == pytest.approx(estimate(dataclasses.replace(base, dp=1, zero=0)).per_device["weights"] / 8
                                    + 2 * layer)
    kept = estimate(dataclasses.replace(base, zero3_keep_gathered=True)).per_device["weights"]
    assert kept > sharded


def test_mistral_kv_cache_honours_its_sliding_window():
    # Mistral-7B-v0.1 config.json: "sliding_window": 4096; the rolling buffer caches at most 4096 positions.
    m = get_preset("mistral-7b")
    assert m.sliding_window == 4096
    at_4k = estimate_memory(m, mode="infer", batch=1, seq=4096).total["kv_cache"]
    at_8k = estimate_memory(m, mode="infer", batch=1, seq=8192).total["kv_cache"]
    assert at_8k == at_4k == 2 * 32 * 8 * 128 * 4096 * 2
    full = dataclasses.replace(m, sliding_window=None)
    assert estimate_memory(full, mode="infer", batch=1, seq=8192).total["kv_cache"] == 2 * at_4k
    with pytest.raises(ValueError, match="sliding_window"):
        dataclasses.replace(m, sliding_window=0)


def test_flops_layer_intensities():
    from aihw.transformer import flops

    m = get_preset("llama-2-7b")
    decode = {o.op: o.intensity for o in flops.layer_intensities(m, batch=64, new_tokens=1, context=4096)}
    # a weight matmul at batch b has intensity ~b FLOP/byte (2-byte weights); decode attention ~1 at any batch
    assert 55 < decode["MLP down"] < 64 and 0.9 < decode["scores Q·Kᵀ"] < 1.1
    prefill = flops.layer_intensities(m, batch=1, new_tokens=4096, context=4096)
    assert all(o.intensity > 100 for o in prefill if o.kind.startswith("matmul"))
    assert all(o.intensity < 2 for o in prefill if o.kind == "elementwise")
    with pytest.raises(ValueError, match="new_tokens"):
        flops.layer_intensities(m, batch=1, new_tokens=10, context=5)


SPLITS = [dict(dp=8, zero=3), dict(dp=8, zero=3, zero3_keep_gathered=True), dict(dp=4, zero=1), dict(tp=8),
          dict(tp=8, sequence_parallel=False), dict(pp=4), dict(pp=4, virtual_stages=2, micro_batches=8),
          dict(pp=4, schedule="gpipe", micro_batches=16), dict(pp=4, stage_layers=12), dict(cp=2), dict(zero=2)]


@pytest.mark.parametrize("base", [
    MemoryConfig(model="llama-2-13b", seq=4096, batch=2, grad_precision="fp32", attention="fused"),
    MemoryConfig(model="gpt2-medium", precision="fp16", recompute="selective", dropout=True),
    MemoryConfig(model="mixtral-8x7b", seq=4096, recompute="full", overhead_fraction=0.1, overhead_bytes=1e9),
    MemoryConfig(model="mistral-7b", mode="infer", batch=8, seq=8192, kv_precision="fp8_e4m3"),
], ids=["llama-fused", "gpt2-fp16", "mixtral-full", "mistral-infer"])
def test_single_device_total_ignores_how_the_model_is_split(base):
    """per_device_bytes computes the total once for every split of a search (aihw.memory.estimator.SPLIT_FIELDS): the
    total must not depend on any of those fields, and per_device_bytes must equal estimate()'s number."""
    from aihw.memory.estimator import SPLIT_FIELDS, per_device_bytes

    assert set(SPLIT_FIELDS) <= {f.name for f in dataclasses.fields(MemoryConfig)}
    splits = SPLITS + ([dict(dp=2, ep=2), dict(dp=4, ep=4, tp=2)] if base.model.is_moe else [])
    assert {name for split in SPLITS for name in split} | {"ep"} == set(SPLIT_FIELDS)  # ep: MoE models only
    for split in splits:
        config = dataclasses.replace(base, **split)
        assert estimate(config).total == estimate(base).total, split
        assert per_device_bytes(config) == estimate(config).per_device_bytes
