"""Device measurement: a tiny real run on this machine, the arithmetic of each point, and config checks."""

from __future__ import annotations

import json

import pytest
import torch

from aihw.measure.roofline import CopyPoint, DeviceMeasurement, MatmulPoint, MeasureConfig, measure_device

TINY = MeasureConfig(device="cpu", dtypes=("fp32",), matmul_sizes=(32, 64), copy_mib=(1,), repeats=2,
                     warmup=1, max_seconds=10.0)


@pytest.fixture(scope="module")
def tiny() -> DeviceMeasurement:
    return measure_device(TINY)


def test_tiny_run_measures_every_point_with_positive_values(tiny):
    assert tiny.device == "cpu"
    assert [(p.dtype, p.n) for p in tiny.matmul] == [("fp32", 32), ("fp32", 64)]
    assert [c.mib for c in tiny.copy] == [1]
    assert tiny.skipped == ()
    for point in tiny.matmul:
        assert point.seconds > 0 and point.flops_per_s > 0 and point.intensity > 0
    assert tiny.copy[0].seconds > 0 and tiny.copy[0].bytes_per_s > 0


def test_points_follow_their_definitions(tiny):
    for point in tiny.matmul:
        assert point.flops_per_s == pytest.approx(2 * point.n**3 / point.seconds)
        assert point.intensity == pytest.approx(2 * point.n**3 / (3 * point.n**2 * 4))
    copy = tiny.copy[0]
    assert copy.bytes_per_s == pytest.approx(2 * 2**20 / copy.seconds)  # read + write


def test_best_values_and_dict(tiny):
    assert tiny.best_flops("fp32") == max(p.flops_per_s for p in tiny.matmul)
    assert tiny.best_bandwidth() == tiny.copy[0].bytes_per_s
    with pytest.raises(ValueError, match=r"'bf16'.*measured: fp32"):
        tiny.best_flops("bf16")
    data = json.loads(json.dumps(tiny.to_dict()))
    assert data["matmul"][0]["n"] == 32 and data["description"]["device"] == "cpu"
    assert isinstance(data["notes"], list)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only skip reasons")
def test_cpu_skips_tf32_and_fp8_with_reasons():
    config = MeasureConfig(device="cpu", dtypes=("tf32", "fp8", "bf16"), matmul_sizes=(32,), copy_mib=(0.25,),
                           repeats=1, warmup=0)
    result = measure_device(config)
    assert [p.dtype for p in result.matmul] == ["bf16"]
    assert any(s.startswith("tf32: tf32 is a CUDA tensor-core mode") for s in result.skipped)
    assert any(s.startswith("fp8: fp8 matmul is measured only on CUDA") for s in result.skipped)


def test_budget_overrun_is_skipped_and_recorded():
    config = MeasureConfig(device="cpu", dtypes=("fp32",), matmul_sizes=(16, 32), copy_mib=(0.25,),
                           repeats=1, warmup=0, max_seconds=1e-9)
    result = measure_device(config)
    assert result.matmul == () and result.copy == ()
    assert len(result.skipped) == 3
    assert all("max_seconds=1e-09" in s for s in result.skipped)
    with pytest.raises(ValueError, match="no copy bandwidth"):
        result.best_bandwidth()


def test_points_are_frozen():
    point = MatmulPoint("fp32", 8, 1.0, 1024.0, 8 / 6)
    with pytest.raises(AttributeError):
        point.n = 9  # type: ignore[misc]
    assert CopyPoint(1.0, 1.0, 2.0).mib == 1.0


@pytest.mark.parametrize(("kwargs", "pattern"), [
    ({"device": "gpu"}, r"unknown device 'gpu'; allowed: auto, cpu"),
    ({"device": "cuda:x"}, r"unknown device 'cuda:x'"),
    ({"dtypes": ("fp32", "bf61")}, r"unknown dtypes\[1\] 'bf61'.*did you mean 'bf16'"),
    ({"dtypes": ()}, r"dtypes must be a non-empty tuple"),
    ({"dtypes": ["fp32"]}, r"dtypes must be a non-empty tuple"),
    ({"dtypes": ("fp32", "fp32")}, r"dtypes must not repeat"),
    ({"matmul_sizes": (128, 0)}, r"matmul_sizes\[1\] must be an integer in \[1, 65536\], got 0"),
    ({"matmul_sizes": (12.5,)}, r"matmul_sizes\[0\] .*got 12\.5"),
    ({"copy_mib": (-1,)}, r"copy_mib\[0\] must be a positive"),
    ({"repeats": 0}, r"repeats must be an integer in \[1, 10000\], got 0"),
    ({"warmup": -1}, r"warmup must be an integer in \[0, 10000\], got -1"),
    ({"max_seconds": 0}, r"max_seconds must be a positive"),
])
def test_bad_config_values_are_named(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        MeasureConfig(**kwargs)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only answer")
def test_missing_gpu_is_reported_at_measure_time():
    with pytest.raises(ValueError, match="no CUDA GPU"):
        measure_device(MeasureConfig(device="cuda"))
