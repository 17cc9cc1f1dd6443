"""Predicted vs measured on the real TinyGPT: model state exact, saved activations within 10%."""

import pytest

torch = pytest.importorskip("torch")

from aihw.measure.memory import MeasureConfig, compare, measure  # noqa: E402
from aihw.models.tinygpt import TinyGPTConfig  # noqa: E402
from aihw.runtime.tensors import SavedTensorCounter, storage_bytes, tensor_bytes  # noqa: E402

torch.set_num_threads(2)

CONFIGS = [
    MeasureConfig(model=TinyGPTConfig(width=64, depth=2, heads=4, seq_len=64), batch=4, optimizer="adamw"),
    MeasureConfig(model=TinyGPTConfig(width=96, depth=3, heads=6, seq_len=32, recompute="selective"), batch=2,
                  optimizer="sgd_momentum"),
    MeasureConfig(model=TinyGPTConfig(width=64, depth=4, heads=2, seq_len=48, recompute="full"), batch=3,
                  optimizer="adam"),
    MeasureConfig(model=TinyGPTConfig(width=32, depth=1, heads=4, seq_len=128), batch=1, optimizer="sgd"),
]


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: f"{c.model.width}x{c.model.depth}-{c.model.recompute}")
def test_predicted_matches_measured(cfg):
    rows = {r["component"]: r for r in compare(cfg)}
    for exact in ("weights", "gradients", "optimizer"):
        assert rows[exact]["measured"] == rows[exact]["predicted"], exact
    assert rows["activations"]["ratio"] == pytest.approx(1.0, abs=0.10)
    # measured saved bytes are a few hundred bytes above the formula: LayerNorm mean/rstd and int64 indices
    assert rows["activations"]["measured"] >= rows["activations"]["predicted"]
    # the peak model (loss-gradient and attention-backward moments) is close to the measured peak
    assert 0.93 <= rows["peak"]["ratio"] <= 1.25, rows["peak"]
    assert rows["peak"]["sum"] == pytest.approx(sum(rows[k]["predicted"] for k in ("weights", "gradients",
                                                                                  "optimizer", "activations")))


def test_recomputation_saves_memory_and_peak_bounds():
    base = TinyGPTConfig(width=64, depth=2, heads=4, seq_len=64)
    got = {rc: measure(MeasureConfig(model=TinyGPTConfig(**{**base.__dict__, "recompute": rc}), batch=4))
           for rc in ("none", "selective", "full")}
    assert got["none"]["activations"] > got["selective"]["activations"] > got["full"]["activations"]
    for m in got.values():  # at the end of the forward pass all saved tensors and the model state are alive
        assert m["peak"] >= m["weights"] + m["optimizer"] + m["activations"]
        assert m["peak_method"].startswith("torch.profiler")


def test_peak_model_follows_the_attention_term():
    # long sequence: the a*s*s backward buffers, not the logits' gradients, set the peak
    long = MeasureConfig(model=TinyGPTConfig(width=32, depth=1, heads=4, seq_len=512), batch=1)
    peak = compare(long)[-1]
    assert 0.93 <= peak["ratio"] <= 1.2, peak
    assert peak["ratio_to_sum"] > 1.3  # the plain sum of the components misses it by far


def test_storage_dedup():
    t = torch.zeros(10, 10)
    assert storage_bytes([t, t, t.view(100), t[0]]) == 400
    assert tensor_bytes(t) == 400 and tensor_bytes([t, None, t.to(torch.bfloat16)]) == 600
    lin = torch.nn.Linear(4, 4)
    x = torch.randn(2, 4, requires_grad=True)
    with SavedTensorCounter(lin) as c:
        y = torch.softmax(lin(x), -1)
        z = y * y  # saves y twice (both operands): one storage
    assert c.saves >= 3 and c.bytes == 2 * 4 * 4 + 2 * 4 * 4  # x (input of linear) + y; the weight is excluded
    z.sum().backward()


def test_bad_measure_config():
    with pytest.raises(ValueError, match="optimizer"):
        MeasureConfig(optimizer="adam8bit")
    with pytest.raises(ValueError, match="seq=999"):
        MeasureConfig(seq=999)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_peak():  # pragma: no cover - runs on a GPU machine only
    m = measure(MeasureConfig(device="cuda", batch=4))
    assert m["peak_method"] == "torch.cuda.max_memory_allocated"
    assert m["peak"] >= m["weights"] + m["optimizer"] + m["activations"]


AUTOCAST = [
    MeasureConfig(model=TinyGPTConfig(width=64, depth=2, heads=4, seq_len=64), batch=4, precision="bf16-autocast"),
    MeasureConfig(model=TinyGPTConfig(width=32, depth=3, heads=2, seq_len=48, vocab=128), batch=3,
                  optimizer="adam", precision="bf16-autocast"),
]


@pytest.mark.parametrize("cfg", AUTOCAST, ids=lambda c: f"{c.model.width}x{c.model.depth}")
def test_bf16_autocast_predicted_matches_measured_on_cpu(cfg):
    rows = {r["component"]: r for r in compare(cfg)}
    fp32 = {r["component"]: r for r in compare(MeasureConfig(model=cfg.model, batch=cfg.batch,
                                                              optimizer=cfg.optimizer))}
    for k in ("weights", "gradients", "optimizer"):  # fp32 parameters, gradients and Adam states: 16 B/param
        assert rows[k]["measured"] == rows[k]["predicted"] == fp32[k]["measured"], k
    assert rows["weights"]["measured"] == 4 * measure(cfg)["params"]
    # saved activations, tensor by tensor: exact up to one fp32 scalar the count leaves out
    assert abs(rows["activations"]["measured"] - rows["activations"]["predicted"]) <= 8, rows["activations"]
    assert rows["activations"]["measured"] < fp32["activations"]["measured"]  # bf16 casts save memory...
    assert rows["activations"]["measured"] > fp32["activations"]["measured"] / 2  # ...but not half (fp32 kept)
    assert 0.93 <= rows["peak"]["ratio"] <= 1.25, rows["peak"]


def test_bf16_autocast_refuses_what_it_cannot_predict():
    with pytest.raises(ValueError, match="bf16-autocast"):
        MeasureConfig(model=TinyGPTConfig(recompute="full"), precision="bf16-autocast")
    with pytest.raises(ValueError, match="precision"):
        MeasureConfig(precision="fp16-autocast")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_bf16_autocast():  # pragma: no cover - runs on a GPU machine only
    rows = {r["component"]: r for r in compare(MeasureConfig(device="cuda", batch=4, precision="bf16-autocast"))}
    assert rows["peak"]["peak_method"] == "torch.cuda.max_memory_allocated"
    assert rows["optimizer"]["ratio"] == 1.0 and 0.9 <= rows["activations"]["ratio"] <= 1.1
