"""The mixed-precision effects the chapter claims, reproduced on real TinyGPT runs: these fail if they vanish."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from aihw.mixed.fp8 import Fp8Config, run_fp8  # noqa: E402
from aihw.mixed.training import MixedConfig, activation_memory, gradient_underflow, run, stochastic_round_bf16  # noqa: E402

UNDERFLOW = {"accumulation": 2**14, "steps": 40}
LOST = {"lr": 3e-5, "steps": 150}


@pytest.fixture(scope="module", autouse=True)
def _threads():
    old = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matmuls: one thread is as fast and immune to oversubscribed cores
    yield
    torch.set_num_threads(old)


def test_fp16_without_loss_scaling_underflows_and_stalls_grad_scaler_recovers():
    ref = run(MixedConfig("fp32", **UNDERFLOW))
    plain = run(MixedConfig("fp16", **UNDERFLOW))
    scaled = run(MixedConfig("fp16_scaled", **UNDERFLOW))
    # without scaling most gradient elements flush to 0 in the fp16 backward, and the loss stalls
    assert np.mean(plain.zero_grad_fraction) > 0.5
    assert np.mean(ref.zero_grad_fraction) < 0.01
    start = ref.losses[0]
    assert start - plain.final_loss < 0.5 * (start - ref.final_loss)
    # GradScaler: the first steps overflow (2^16 is inf in fp16) and are skipped, then it trains like fp32
    assert scaled.skipped_steps >= 1
    assert np.mean(scaled.zero_grad_fraction) < 0.01
    assert abs(scaled.final_loss - ref.final_loss) < 0.25 * (start - ref.final_loss)


def test_gradient_magnitudes_predict_the_underflow():
    low = gradient_underflow(MixedConfig(accumulation=1))
    high = gradient_underflow(MixedConfig(**UNDERFLOW))
    assert low["flush_to_zero"] < 0.01 < 0.1 < high["flush_to_zero"]
    assert high["subnormal"] > 0.99


def test_pure_bf16_loses_updates_master_weights_and_stochastic_rounding_keep_them():
    pure = run(MixedConfig("bf16_pure", **LOST))
    master = run(MixedConfig("bf16_master", **LOST))
    sr = run(MixedConfig("bf16_stochastic", **LOST))
    assert np.mean(pure.lost_update_fraction) > 0.5  # w + lr*g == w for most weights
    assert np.mean(master.lost_update_fraction) == 0
    start = master.losses[0]
    assert pure.final_loss - master.final_loss > 0.2 * (start - master.final_loss)
    assert abs(sr.final_loss - master.final_loss) < 0.1 * (start - master.final_loss)


def test_stochastic_rounding_bf16_is_unbiased_and_bitwise():
    gen = torch.Generator().manual_seed(0)
    x = torch.full((100000,), 1.0 + 2.0**-10)
    r = stochastic_round_bf16(x, gen).float()
    assert set(r.unique().tolist()) == {1.0, 1.0 + 2.0**-7}
    assert abs(r.mean().item() - x[0].item()) < 2e-5
    assert x.to(torch.bfloat16).float().unique().tolist() == [1.0]


def test_autocast_bf16_saves_fewer_bytes_but_more_than_two_bytes_per_value():
    rows = {r["run"]: r for r in activation_memory(width=32, depth=2, heads=2, seq=32, batch=2)}
    assert 0.95 < rows["fp32"]["ratio"] < 1.15
    assert rows["autocast bf16"]["measured_bytes"] < rows["fp32"]["measured_bytes"]
    assert rows["autocast bf16"]["ratio"] > 1.2  # autocast keeps fp32 copies (norms, softmax, loss)


def test_fp8_recipes_train_and_count_overflows():
    base = run_fp8(Fp8Config("none", steps=40))
    res = {r: run_fp8(Fp8Config(r, steps=40)) for r in ("current", "delayed", "block")}
    for r in res.values():
        assert abs(r.final_loss - base.final_loss) < 0.3
    assert sum(res["current"].overflows.values()) == 0  # scaled to its own amax: nothing saturates
    assert sum(res["delayed"].overflows.values()) > 0  # amax grows faster than the history
    assert res["block"].overflows["activation"] > 0  # MX scale floor(log2 amax)-8 leaves amax/X up to 512 > 448


def test_bad_configs():
    with pytest.raises(ValueError, match="did you mean 'fp16'"):
        MixedConfig("fp61")
    with pytest.raises(ValueError, match="power of two"):
        MixedConfig(accumulation=3)
    with pytest.raises(ValueError, match="block size 48 does not divide the width"):
        Fp8Config("block", block=48)


def test_model_tensors_are_real_weights_and_activations():
    from aihw.mixed.training import model_tensors

    t = model_tensors(MixedConfig(steps=3))
    assert t["blocks.0.mlp.fc.weight"].shape == (128, 32) and t["blocks.0.mlp.proj.input"].shape == (256, 128)
    assert (t["blocks.0.mlp.proj.input"] >= -0.2).all()  # GELU outputs: bounded below
