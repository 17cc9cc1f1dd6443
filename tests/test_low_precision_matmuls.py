"""Weight-only INT8/INT4, FP8 and 2:4 rows: the CPU kernels against their own definition, and every skip reason
(GPU answers mocked: no GPU runs here)."""

import pytest

torch = pytest.importorskip("torch")

from aihw.cheaper import quantize_model as qm  # noqa: E402


def _fake_gpu(monkeypatch, capability):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Mocked GPU")


def test_cpu_rows_run_the_weight_only_kernels_exactly_and_skip_the_rest():
    rows = {r["name"]: r for r in qm.low_precision_matmuls(device="cpu", m=16, k=256, n=128, min_run_time=0.01)}
    assert list(rows) == list(qm.LOW_PRECISION_ROWS)
    for name in ("int8 weight-only", "int4 weight-only"):
        r = rows[name]
        assert r["status"] == "ran" and r["label"].startswith("real:"), r
        assert r["kernel_error"] < 1e-5  # the kernel computes x @ dequantized(w).T, to fp32 rounding
        assert r["speedup"] > 0
    assert rows["int8 weight-only"]["max_rel_error"] < 0.02 < rows["int4 weight-only"]["max_rel_error"] < 0.2
    assert "FP8" in rows["fp8 (e4m3, per-tensor)"]["reason"] and rows["fp8 (e4m3, per-tensor)"]["status"] == "skipped"
    assert "only on CUDA" in rows["2:4 sparse"]["reason"]


def test_int4_layout_round_trips_within_half_a_step():
    w = torch.randn(32, 256, generator=torch.Generator().manual_seed(1))
    q, sz = qm.int4_weight_only(w, 64)
    assert q.dtype == torch.int32 and int(q.min()) >= 0 and int(q.max()) <= 15 and sz.shape == (4, 32, 2)
    step = sz[..., 0].transpose(0, 1).repeat_interleave(64, dim=1)
    assert torch.all((qm.dequantize_int4(q, sz, 64) - w).abs() <= step / 2 + 1e-6)
    q8, s8 = qm.int8_weight_only(w)
    assert torch.all((q8.float() * s8[:, None] - w).abs() <= s8[:, None] / 2 + 1e-7)


@pytest.mark.parametrize(("capability", "expect"), [
    ((7, 5), {"int4 weight-only": "8.0", "fp8 (e4m3, per-tensor)": "FP8 tensor cores", "2:4 sparse": "8.0"}),
    ((8, 0), {"int4 weight-only": None, "fp8 (e4m3, per-tensor)": "FP8 tensor cores", "2:4 sparse": None}),
    ((9, 0), {"int4 weight-only": None, "fp8 (e4m3, per-tensor)": None, "2:4 sparse": None}),
])
def test_gpu_skip_reasons_follow_compute_capability(monkeypatch, capability, expect):
    _fake_gpu(monkeypatch, capability)
    assert qm.low_precision_skip_reason("int8 weight-only", "cuda") is None
    for kind, fragment in expect.items():
        reason = qm.low_precision_skip_reason(kind, "cuda")
        assert (reason is None) if fragment is None else (fragment in reason), (kind, reason)


def test_no_gpu_and_bad_arguments_say_so():
    if not torch.cuda.is_available():
        assert qm.low_precision_skip_reason("2:4 sparse", "cuda") == "no CUDA GPU is available"
        with pytest.raises(ValueError, match="no CUDA GPU"):
            qm.low_precision_matmuls(device="cuda")
    with pytest.raises(ValueError, match="kind"):
        qm.low_precision_skip_reason("int3", "cpu")
    with pytest.raises(ValueError, match="group_size"):
        qm.low_precision_matmuls(device="cpu", group_size=100)
    with pytest.raises(ValueError, match="multiples of 16"):
        qm.low_precision_matmuls(device="cpu", m=15)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_rows():  # pragma: no cover - runs on a GPU machine only
    rows = {r["name"]: r for r in qm.low_precision_matmuls()}
    assert rows["int8 weight-only"]["status"] == "ran" and rows["int8 weight-only"]["kernel_error"] < 1e-2
    if rows["int4 weight-only"]["status"] == "ran":
        assert rows["int4 weight-only"]["kernel_error"] < 1e-2  # checks the CUDA nibble packing
