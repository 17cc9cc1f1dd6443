"""The GPU suite (`make test-gpu`): real outcomes on the visible GPU, each against a stated band.

Every test here is marked ``gpu`` and skips on a machine without CUDA (the reason is printed); `make test-gpu`
selects them. The bands are wide on purpose (a classroom T4 and an H100 both pass) but not empty: each fails if
the measurement is wrong by the kind of error a bug makes (a dtype silently falling back to fp32, a copy that
stays in L2, a matmul that never reaches the tensor cores).
"""

from __future__ import annotations

import pytest
import torch

GPU_ONLY = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (run by make test-gpu)")


@pytest.fixture(scope="module")
def report():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU (run by make test-gpu)")
    from aihw.measure.gpu_report import collect

    return collect(max_seconds=120)


@pytest.mark.gpu
@GPU_ONLY
def test_gpu_is_matched_to_its_catalogue_entry_or_says_why(report):
    assert report["catalogue_note"]
    if report["catalogue_chip"] is None:
        pytest.skip(f"not a catalogue GPU: {report['catalogue_note']}")


@pytest.mark.gpu
@GPU_ONLY
def test_half_matmul_reaches_a_stated_share_of_the_datasheet_peak(report):
    half = report["half_dtype"]  # the tensor-core 16-bit float: fp16 on a T4 (bf16 is emulated there), else bf16
    sheet = report.get("datasheet")
    if not sheet or half not in sheet["dense_tflops"] or "fp32" not in sheet["dense_tflops"]:
        pytest.skip(f"no datasheet {half} and fp32 peaks for this GPU")
    ratio = report["matmul_tflops"][half] / sheet["dense_tflops"][half]
    assert 0.35 <= ratio <= 1.05, f"{half} matmul at {ratio:.2f} of the dense datasheet peak"
    # Tensor cores beat IEEE fp32 by at least a third of the datasheet ratio (T4 ~8x, A100 ~16x, H100 ~15x)
    sheet_ratio = sheet["dense_tflops"][half] / sheet["dense_tflops"]["fp32"]
    assert report["matmul_tflops"][half] > sheet_ratio / 3 * report["matmul_tflops"]["fp32"], report["matmul_tflops"]


@pytest.mark.gpu
@GPU_ONLY
def test_copy_bandwidth_is_hbm_not_l2(report):
    sheet = report.get("datasheet")
    if not sheet:
        pytest.skip("no datasheet bandwidth for this GPU")
    ratio = report["copy_bandwidth_bytes_per_s"] / sheet["bandwidth_bytes_per_s"]
    assert 0.4 <= ratio <= 1.1, f"copy bandwidth at {ratio:.2f} of the datasheet"


@pytest.mark.gpu
@GPU_ONLY
def test_decode_is_bandwidth_bound(report):
    d = report["decode_like"]
    assert 0.8 <= d["measured_over_predicted"] <= 3.0, d


@pytest.mark.gpu
@GPU_ONLY
def test_fp8_is_faster_than_half_where_the_chip_has_fp8(report):
    if "fp8" in report["capability_skips"]:
        pytest.skip(report["capability_skips"]["fp8"])
    assert report.get("fp8_over_half", 0) > 1.2, report.get("skipped")


@pytest.mark.gpu
@GPU_ONLY
def test_int8_matmul_is_faster_than_bf16_on_tensor_cores(report):
    if "skipped" in report["int8"]:
        pytest.skip(report["int8"]["skipped"])
    assert report["int8"]["speedup"] > 1.0, report["int8"]


def test_report_markdown_sets_measured_beside_datasheet_figures():
    from aihw.measure.gpu_report import to_markdown

    fake = {"device": {"cuda_device_name": "NVIDIA H100 80GB HBM3", "cuda_capability": "9.0"},
            "catalogue_chip": "NVIDIA H100 SXM", "catalogue_note": "the catalogue's NVIDIA H100 SXM",
            "skipped": [], "matmul_tflops": {"bf16": 791.0, "fp32": 51.0},
            "datasheet": {"bandwidth_bytes_per_s": 3.35e12, "dense_tflops": {"bf16": 989.4, "fp32": 66.9}},
            "copy_bandwidth_bytes_per_s": 2.9e12,
            "decode_like": {"weight_bytes": 1.07e9, "seconds_per_token": 4.1e-4, "measured_over_predicted": 1.11},
            "int8": {"speedup": 1.6}, "sparse_2_4": {"skipped": "no kernel"}, "fp8_over_half": 1.7,
            "half_dtype": "fp16", "capability_skips": {"bf16": "bf16 tensor cores need compute capability >= 8.0"},
            "nccl": {"skipped": "1 GPU visible"}}
    text = to_markdown(fake)
    assert "| bf16 | 791.0 | 989.4 | 0.80 |" in text
    assert "0.87 × the datasheet's 3,350 GB/s" in text and "FP8 over fp16 (best matmul): 1.70×" in text
    assert "INT8 (torch._int_mm) over fp16: 1.60×" in text
    assert "Not measured on this chip: bf16: bf16 tensor cores need" in text
    assert "2:4 sparse fp16 over dense: no kernel" in text
