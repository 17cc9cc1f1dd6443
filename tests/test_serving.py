"""The analytic serving model (aihw.serving.estimator) and `aihw serve`: formulas, published figures, properties, bad input."""

import json
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aihw.cli import main
from aihw.serving.estimator import (
    ServingConfig,
    estimate,
    estimate_serving,
    kv_bytes_per_token,
    streamed_weights_bytes,
)
from aihw.transformer.shapes import ModelShape, get_preset

OPT_13B = ModelShape("opt-13b", 5120, 40, 40, vocab=50272, max_seq=2048)  # facebook/opt-13b config.json


def test_kv_bytes_per_token_match_published_figures():
    # Kwon et al. 2023 (vLLM), sec. 3: OPT-13B needs 2 x 5120 x 40 x 2 bytes = 800 KB of KV cache per token
    assert kv_bytes_per_token(OPT_13B, 2) == 2 * 5120 * 40 * 2 == 819_200
    # Llama-2-70B (80 layers, 8 KV heads of 128): 320 KiB per token in bf16; Llama-3-8B: 128 KiB
    assert kv_bytes_per_token(get_preset("llama-2-70b"), 2) == 327_680
    assert kv_bytes_per_token(get_preset("llama-3-8b"), 2) == 131_072


def test_weights_and_kv_totals():
    e = estimate_serving("llama-2-7b", chip="H100 SXM", precision="bf16", batch=4, context=2048)
    m = get_preset("llama-2-7b")
    assert e.weights_bytes == 2 * m.param_count()
    assert e.kv_cache_bytes == 4 * 2048 * kv_bytes_per_token(m, 2)
    assert e.per_device_bytes == e.weights_bytes + e.kv_cache_bytes
    int4 = estimate_serving("llama-2-7b", chip="H100 SXM", precision="int4", batch=4, context=2048)
    assert int4.weights_bytes == pytest.approx(e.weights_bytes / 4)
    fp8kv = estimate_serving("llama-2-7b", chip="H100 SXM", kv_precision="fp8_e4m3", batch=4, context=2048)
    assert fp8kv.kv_cache_bytes == pytest.approx(e.kv_cache_bytes / 2)


def test_weight_knee_is_the_chip_ridge_point():
    # "How to Scale Your Model" (Austin et al. 2025, inference chapter): bf16 decode turns compute-bound near
    # batch 240 on TPU v5e (197 TFLOP/s / 819 GB/s); on H100 SXM the same ratio is about 295.
    v5e = estimate_serving("llama-2-7b", chip="TPU v5e", context=128)
    h100 = estimate_serving("llama-2-7b", chip="H100 SXM", context=128)
    assert v5e.knee_batch_weights == pytest.approx(240, rel=0.05)
    assert h100.knee_batch_weights == pytest.approx(295, rel=0.05)


def test_decode_is_bandwidth_bound_at_batch_one_and_compute_bound_past_the_knee():
    small = estimate_serving("llama-2-7b", chip="H100 SXM", batch=1, context=64)
    assert small.decode_bound == "memory"
    assert small.decode_seconds_per_token == pytest.approx(small.weights_bytes / 3.35e12, rel=0.02)
    assert small.knee_batch is not None
    big = estimate_serving("llama-2-7b", chip="H100 SXM", batch=small.knee_batch + 1, context=64)
    assert big.decode_bound == "compute"
    below = estimate_serving("llama-2-7b", chip="H100 SXM", batch=small.knee_batch - 1, context=64)
    assert below.decode_bound == "memory"


def test_long_context_kv_reads_remove_the_knee():
    e = estimate_serving("llama-2-7b", chip="H100 SXM", batch=1, context=4096)
    assert e.knee_batch is None and e.knee_batch_weights is not None


def test_max_batch_is_the_fitting_boundary():
    e = estimate_serving("llama-2-13b", chip="A100 80GB SXM", batch=1, context=4096)
    at = estimate_serving("llama-2-13b", chip="A100 80GB SXM", batch=e.max_batch, context=4096)
    over = estimate_serving("llama-2-13b", chip="A100 80GB SXM", batch=e.max_batch + 1, context=4096)
    assert at.fits and not over.fits


def test_tensor_parallel_splits_memory_and_adds_all_reduces():
    one = estimate_serving("llama-2-70b", chip="H100 SXM", batch=8, context=4096, tp=1)
    eight = estimate_serving("llama-2-70b", chip="H100 SXM", batch=8, context=4096, tp=8)
    assert not one.fits and eight.fits
    assert eight.per_device_bytes == pytest.approx(one.per_device_bytes / 8)
    assert one.decode_comm_seconds == 0 and eight.decode_comm_seconds > 0
    assert eight.decode_seconds_per_token < one.decode_seconds_per_token


def test_sliding_window_caps_the_cache_and_allows_longer_context():
    m = replace(get_preset("mistral-7b"), sliding_window=4096)
    e = estimate(ServingConfig(m, context=32768, batch=2))
    assert e.kv_cache_bytes == 2 * 4096 * kv_bytes_per_token(m, 2)


def test_cost_per_million_tokens_from_price():
    e = estimate_serving("llama-3-8b", chip="H100 SXM", batch=32, context=2048)
    price = 4.916  # catalogue snapshot, USD per H100-hour
    assert e.cost_per_million_tokens == pytest.approx(price / 3600 / e.tokens_per_second * 1e6, rel=1e-3)
    assert estimate_serving("llama-3-8b", chip="B200", context=2048).cost_per_million_tokens is None


@given(batch=st.integers(1, 512), context=st.integers(1, 4096), tp=st.sampled_from([1, 2, 4, 8]),
       precision=st.sampled_from(["bf16", "fp16", "int8", "int4", "fp32"]),
       model=st.sampled_from(["llama-2-7b", "llama-3-8b", "llama-2-70b", "gpt2-small", "mistral-7b"]))
def test_properties(batch, context, tp, precision, model):
    m = get_preset(model)
    if m.heads % tp or m.n_kv_heads % tp or context > m.max_seq:
        return
    e = estimate_serving(model, chip="H100 SXM", precision=precision, batch=batch, context=context, tp=tp)
    more = estimate_serving(model, chip="H100 SXM", precision=precision, batch=batch + 1, context=context, tp=tp)
    assert more.per_device_bytes >= e.per_device_bytes  # more batch never lowers memory
    bw = 3.35e12
    read = (streamed_weights_bytes(m, precision, batch) + e.kv_cache_bytes) / tp
    assert e.decode_seconds_per_token >= read / bw * (1 - 1e-12)  # never below bytes / bandwidth
    assert e.decode_seconds_per_token >= e.decode_compute_seconds
    assert more.tokens_per_second >= e.tokens_per_second * (1 - 1e-9) or more.decode_bound == "compute"


@pytest.mark.parametrize("kwargs, message", [
    ({"context": 99_999}, "exceeds the maximum context"),
    ({"batch": 0}, "batch must be a positive integer"),
    ({"context": -1}, "context must be a positive integer"),
    ({"tp": 3}, "must divide"),
    ({"chip": "H1000"}, "unknown chip"),
    ({"precision": "fp7"}, "unknown precision"),
    ({"chip": "TPU v5e", "precision": "fp8_e4m3"}, "no published dense fp8"),
    ({"prompt": 5000, "context": 4096}, "must not exceed"),
])
def test_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ServingConfig("llama-3-8b", **kwargs)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_json_has_the_promised_fields(capsys):
    code, out, _ = run(capsys, "serve", "--model", "llama-3-8b", "--chip", "H100 SXM", "--precision", "bf16",
                       "--batch", "8", "--context", "4096", "--tp", "2", "--prompt", "512", "--json")
    assert code == 0
    data = json.loads(out)
    for key in ("weights_bytes", "kv_cache_bytes_per_token", "kv_cache_bytes", "per_device_bytes", "fits",
                "prefill_seconds", "decode_seconds_per_token", "tokens_per_second", "max_batch", "knee_batch",
                "assumptions"):
        assert key in data
    assert data["prompt"] == 512 and data["tp"] == 2 and all(isinstance(a, str) for a in data["assumptions"])


def test_cli_text_and_model_file(capsys, tmp_path):
    f = tmp_path / "opt13b.toml"
    f.write_text("hidden = 5120\nlayers = 40\nheads = 40\nvocab = 50272\nmax_seq = 2048\n")
    code, out, _ = run(capsys, "serve", "--model", str(f), "--chip", "A100 80GB SXM", "--context", "2048")
    assert code == 0 and "819.2 kB per token" in out
    code, out, _ = run(capsys, "memory", "--model", str(f), "--mode", "infer", "--json")
    assert code == 0 and json.loads(out)["total_bytes"] > 0
    code, out, _ = run(capsys, "plan", "--model", str(f), "--chip", "H100 SXM", "--nodes", "1", "--json")
    assert code == 0 and json.loads(out)["model"] == "opt13b"


@pytest.mark.parametrize("argv", [
    ["--model", "llama-3-8b", "--context", "100000"],
    ["--model", "llama-3-8b", "--batch", "0"],
    ["--model", "llama-3-8b", "--tp", "3"],
    ["--model", "llama-3-8b", "--chip", "nope"],
    ["--model", "llama-3-8b", "--precision", "fp7"],
    ["--model", "missing.toml"],
])
def test_cli_bad_input_one_line_exit_2(capsys, argv):
    code, out, err = run(capsys, "serve", *argv)
    assert code == 2 and out == "" and err.startswith("aihw: error: ") and err.count("\n") == 1


def test_cli_inconsistent_model_file(capsys, tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text("hidden = 64\nlayers = 2\nheads = 4\nkv_heads = 3\nvocab = 10\nmax_seq = 8\n")
    code, _, err = run(capsys, "serve", "--model", str(f))
    assert code == 2 and "kv_heads=3 must divide heads=4" in err
    f.write_text("hidden = 64\nlayers = 2\n")
    code, _, err = run(capsys, "serve", "--model", str(f))
    assert code == 2 and "missing field" in err


def test_decode_gathers_embedding_rows_and_streams_the_rest():
    # inference.md: the input-embedding table is gathered row by row, not streamed, so an untied model's decode
    # step reads every weight but that table (plus one row per sequence); a tied table is the head and is streamed.
    l3 = get_preset("llama-3-8b")
    assert streamed_weights_bytes(l3, "bf16", 4) == 2 * (l3.param_count() - l3.vocab * l3.hidden + 4 * l3.hidden)
    g2 = get_preset("gpt2-small")  # tied, learned positions: only the position table is gathered
    assert streamed_weights_bytes(g2, "bf16", 1) == 2 * (g2.param_count() - g2.max_seq * g2.hidden + g2.hidden)
    # so the knee of the weight matmuls is the chip's ridge point for every model, embedding table or not
    for name in ("llama-2-7b", "llama-3-8b", "gpt2-small"):
        assert estimate_serving(name, chip="H100 SXM", context=128).knee_batch_weights == pytest.approx(295, rel=0.01)
        assert estimate_serving(name, chip="TPU v5e", context=128).knee_batch_weights == pytest.approx(240, rel=0.01)
