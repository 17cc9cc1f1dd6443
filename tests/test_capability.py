"""Per-chip capability rules (one module) and the skip decisions made from them with CUDA mocked as real chips."""

from __future__ import annotations

import pytest
import torch

from aihw.chips.capability import FEATURES, Capability

# (name, compute capability, features that must run natively)
CHIPS = {
    "T4": ((7, 5), {"fp16", "int8"}),
    "A100": ((8, 0), {"fp16", "bf16", "tf32", "int8", "int4 weight-only", "2:4 sparse"}),
    "L4": ((8, 9), set(FEATURES)),
    "H100": ((9, 0), set(FEATURES)),
}


@pytest.mark.parametrize("chip", sorted(CHIPS))
def test_each_chip_has_exactly_its_native_features(chip):
    (major, minor), native = CHIPS[chip]
    cap = Capability(major, minor)
    assert {f for f in FEATURES if cap.has(f)} == native
    for feature in FEATURES:
        reason = cap.skip_reason(feature)
        assert (reason is None) == (feature in native)
        if reason is not None:
            assert f"this GPU is {major}.{minor}" in reason
    assert cap.half_dtype == ("fp16" if chip == "T4" else "bf16")


def test_t4_measures_fp16_because_its_bf16_is_emulated():
    t4 = Capability(7, 5)
    assert t4.tensor_core_dtypes == ("fp16", "int8") and "emulated" in t4.skip_reason("bf16")


@pytest.mark.parametrize("bad", [(-1, 0), (8, 1.5), (True, 0)])
def test_bad_capability_is_refused(bad):
    with pytest.raises(ValueError, match="compute capability"):
        Capability(*bad)
    with pytest.raises(ValueError, match="feature must be one of"):
        Capability(8, 0).has("fp4")  # type: ignore[arg-type]


@pytest.fixture
def mocked_cuda(monkeypatch):
    """Make torch report one CUDA GPU of a chosen capability (nothing runs on it)."""

    def as_chip(chip: str) -> None:
        cap = CHIPS[chip][0]
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: cap)
        monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: f"NVIDIA {chip}")

    return as_chip


# which low-precision rows a chip runs (None) or skips (a phrase the reason must hold)
EXPECTED_ROWS = {
    "T4": {"int8 weight-only": None, "int4 weight-only": "compute capability >= 8.0",
           "fp8 (e4m3, per-tensor)": "compute capability >= 8.9", "2:4 sparse": "compute capability >= 8.0"},
    "A100": {"int8 weight-only": None, "int4 weight-only": None, "fp8 (e4m3, per-tensor)": "compute capability >= 8.9",
             "2:4 sparse": None},
    "L4": {"int8 weight-only": None, "int4 weight-only": None, "fp8 (e4m3, per-tensor)": None, "2:4 sparse": None},
    "H100": {"int8 weight-only": None, "int4 weight-only": None, "fp8 (e4m3, per-tensor)": None, "2:4 sparse": None},
}


@pytest.mark.parametrize("chip", sorted(EXPECTED_ROWS))
def test_low_precision_rows_run_or_skip_with_the_reason(mocked_cuda, chip):
    from aihw.cheaper.quantize_model import LOW_PRECISION_ROWS, low_precision_skip_reason

    mocked_cuda(chip)
    for kind in LOW_PRECISION_ROWS:
        reason, expected = low_precision_skip_reason(kind, "cuda"), EXPECTED_ROWS[chip][kind]
        if kind.startswith("fp8") and not hasattr(torch, "_scaled_mm"):
            pytest.skip("this torch has no torch._scaled_mm")
        assert (reason is None) == (expected is None), (kind, reason)
        if expected is not None:
            assert expected in reason, (kind, reason)


@pytest.mark.parametrize("chip", sorted(CHIPS))
def test_gpu_report_compares_against_the_chip_half_dtype_and_skips_what_it_cannot_run(mocked_cuda, chip):
    from aihw.measure.gpu_report import _torch_half, sparse_24_speedup

    mocked_cuda(chip)
    device = torch.device("cuda", 0)
    assert _torch_half(device) == (("fp16", torch.float16) if chip == "T4" else ("bf16", torch.bfloat16))
    if chip == "T4":  # refused before any CUDA tensor is made
        assert "compute capability >= 8.0" in sparse_24_speedup(device)["skipped"]


def test_the_cuda_int4_path_is_refused_below_sm80(mocked_cuda):
    from aihw.inference.quantized import _require_cuda_int4

    mocked_cuda("T4")
    with pytest.raises(RuntimeError, match="compute capability >= 8.0"):
        _require_cuda_int4(torch.device("cuda", 0), 128)
    mocked_cuda("A100")
    _require_cuda_int4(torch.device("cuda", 0), 256)
    with pytest.raises(ValueError, match="divisible by 128"):
        _require_cuda_int4(torch.device("cuda", 0), 64)
