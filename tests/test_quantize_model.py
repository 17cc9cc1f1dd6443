"""Whole-model quantization: simulated PTQ with calibration, real dynamic INT8, FP8 (real on capable GPUs)."""

import pytest
import torch

from aihw.cheaper import quantize_model
from aihw.cheaper.quantize import PerChannel, PerGroup, QuantScheme
from aihw.models import digits
from aihw.runtime import device


@pytest.fixture(scope="module")
def setup():
    data = digits.load_digits()
    return digits.train_mlp(data, digits.TrainConfig(hidden=(64, 64), epochs=10)), data


def test_int8_weights_keep_accuracy_and_int2_hurts(setup):
    model, data = setup
    base = digits.accuracy(model, data.x_test, data.y_test)
    rows = {r["scheme"]: r for r in quantize_model.scheme_accuracies(
        model, data, [QuantScheme("int8", PerChannel(0)), QuantScheme("int4", PerGroup(16)), QuantScheme("int2")])}
    assert abs(rows["int8 per-channel(axis=0) sym"]["accuracy"] - base) <= 0.01
    assert rows["int2 per-tensor sym"]["accuracy"] < base - 0.02
    fp32 = quantize_model.storage_bytes(model)
    assert 3.5 < fp32 / rows["int8 per-channel(axis=0) sym"]["size_bytes"] <= 4  # scales and fp32 biases cost a bit


def test_static_ptq_with_calibration(setup):
    model, data = setup
    ranges = quantize_model.calibrate(model, [data.x_train[:64], data.x_train[64:128]])
    assert set(ranges) == {"0", "2", "4"} and ranges["0"][0] == 0.0 and ranges["0"][1] <= 1.0
    assert ranges["2"][0] >= 0  # after a ReLU
    ptq = quantize_model.post_training_quantize(model, weights=QuantScheme("int8", PerChannel(0)),
                                                activations=QuantScheme("int8", symmetric=False),
                                                calibration=[data.x_train[:256]])
    assert isinstance(ptq[0], quantize_model.FakeQuantLinear) and ptq[0].act_qparams is not None
    assert abs(digits.accuracy(ptq, data.x_test, data.y_test) - digits.accuracy(model, data.x_test, data.y_test)) <= 0.02


def test_empty_calibration_set_and_bad_activation_scheme(setup):
    model, data = setup
    with pytest.raises(ValueError, match="calibration set is empty"):
        quantize_model.calibrate(model, [])
    with pytest.raises(ValueError, match="calibration set is empty"):
        quantize_model.post_training_quantize(model, weights=QuantScheme(), activations=QuantScheme(),
                                              calibration=[torch.empty(0, 64)])
    with pytest.raises(ValueError, match="needs a calibration set"):
        quantize_model.post_training_quantize(model, weights=QuantScheme(), activations=QuantScheme())
    with pytest.raises(ValueError, match="per-tensor only"):
        quantize_model.post_training_quantize(model, weights=QuantScheme(),
                                              activations=QuantScheme("int8", PerChannel(1)), calibration=[data.x_test])


def test_layer_errors_six_db_per_bit(setup):
    model, _ = setup
    rows = quantize_model.layer_errors(model, [QuantScheme("int8", PerChannel(0)), QuantScheme("int4", PerChannel(0))])
    for layer in ("0", "2", "4"):
        s8, s4 = (next(r["sqnr_db"] for r in rows if r["layer"] == layer and r["scheme"].startswith(b))
                  for b in ("int8", "int4"))
        assert 20 < s8 - s4 < 28


def test_dynamic_int8_is_real_and_close(setup):
    model, data = setup
    int8, backend = quantize_model.dynamic_int8(model)
    assert backend == "torch.ao" and isinstance(int8[0], torch.ao.nn.quantized.dynamic.Linear)
    assert isinstance(model[0], torch.nn.Linear)  # the original is untouched
    with torch.inference_mode():
        diff = (int8(data.x_test) - model(data.x_test)).abs().max()
    assert float(diff) < 0.5
    assert abs(digits.accuracy(int8, data.x_test, data.y_test) - digits.accuracy(model, data.x_test, data.y_test)) <= 0.01
    assert digits.size_bytes(model) / digits.size_bytes(int8) > 2.5  # a file of 9k weights: headers weigh
    with pytest.raises(ValueError, match="backend"):
        quantize_model.dynamic_int8(model, backend="fbgemm")


def test_torchao_backend_is_optional(setup):
    model, _ = setup
    try:
        import torchao  # noqa: F401
    except ImportError:
        with pytest.raises(ValueError, match="needs the torchao package"):
            quantize_model.dynamic_int8(model, backend="torchao")
    else:
        _, backend = quantize_model.dynamic_int8(model, backend="torchao")
        assert backend == "torchao"


def test_int8_speed_sweep_rows():
    rows = quantize_model.int8_speed_sweep(widths=(64,), batches=(4,), repeats=2)
    assert rows[0]["width"] == 64 and rows[0]["fp32_s"] > 0 and rows[0]["int8_s"] > 0


def test_fp8_on_cpu_is_simulated_and_labelled(setup):
    model, data = setup
    reason = device.fp8_matmul_support("cpu")
    assert reason and "cpu" in reason
    fp8, label = quantize_model.fp8_model(model, device="cpu")
    assert label.startswith("simulated FP8")
    assert abs(digits.accuracy(fp8, data.x_test, data.y_test) - digits.accuracy(model, data.x_test, data.y_test)) <= 0.02


@pytest.mark.gpu
@pytest.mark.skipif(device.fp8_matmul_support("cuda") is not None, reason="needs an FP8-capable GPU")
def test_real_fp8_matches_simulated_fp8():
    torch.manual_seed(0)
    model = digits.make_mlp((256, 256)).eval()
    x = torch.rand(64, 64)
    real, label = quantize_model.fp8_model(model, device="cuda")
    assert "real FP8" in label and real[0].real and not real[4].real  # 10 outputs: not a multiple of 16
    simulated, _ = quantize_model.fp8_model(model, device="cpu")
    with torch.inference_mode():
        torch.testing.assert_close(real(x.cuda()).cpu(), simulated(x), atol=2e-2, rtol=2e-2)


def test_large_layer_speed_reports_bytes_and_cache():
    from aihw.cheaper import quantize_model as qm

    r = qm.int8_large_layer_speed(features=128, batch=1, repeats=2)
    assert r["fp32_weight_bytes"] == 4 * 128 * 128 and r["int8_weight_bytes"] == 128 * 128
    assert r["fp32_s"] > 0 and r["int8_s"] > 0 and r["speedup"] == r["fp32_s"] / r["int8_s"]
    llc = qm.last_level_cache_bytes()
    assert llc is None or llc >= 2**15
    with pytest.raises(ValueError, match="features"):
        qm.int8_large_layer_speed(features=0)


def test_scheme_accuracies_seeds_pairs_each_model_with_its_fp32_original(tmp_path, monkeypatch):
    from aihw.stats import mean_ci95, paired_difference_ci95

    data = digits.load_digits()
    config = digits.TrainConfig(hidden=(16, 16), epochs=3)
    schemes = [QuantScheme("int8", PerChannel(0)), QuantScheme("int2")]
    result = quantize_model.scheme_accuracies_seeds(config, data, schemes, seeds=(0, 1, 2), cache_dir=tmp_path)
    names = [r["scheme"] for r in result["rows"]]
    assert names == ["int8 per-channel(axis=0) sym", "int2 per-tensor sym", quantize_model.W8A8_LABEL,
                     quantize_model.DYNAMIC_INT8_LABEL]
    models, _ = digits.trained_mlps(config, (0, 1, 2), data=data, cache_dir=tmp_path)
    assert result["fp32"] == [digits.accuracy(m, data.x_test, data.y_test) for m in models]
    assert len(set(result["fp32"])) > 1  # separately trained models, not one model three times
    assert result["fp32_ci"] == mean_ci95(result["fp32"])
    for row in result["rows"]:
        assert row["ci"] == mean_ci95(row["accuracies"])
        assert row["vs_fp32"] == paired_difference_ci95(row["accuracies"], result["fp32"])
    int2 = result["rows"][1]
    assert int2["accuracies"] == [digits.accuracy(quantize_model.quantize_weights(m, QuantScheme("int2")),
                                                  data.x_test, data.y_test) for m in models]
    assert len(list(tmp_path.glob("digits-mlp-*.pt"))) == 3

    def no_training(*_a, **_k):
        raise AssertionError("the base models must come from the cache")

    monkeypatch.setattr(digits, "train_mlp", no_training)
    again = quantize_model.scheme_accuracies_seeds(config, data, schemes, seeds=(0, 1, 2), cache_dir=tmp_path,
                                                   w8a8=False, dynamic=False)
    assert [r["accuracies"] for r in again["rows"]] == [r["accuracies"] for r in result["rows"][:2]]
