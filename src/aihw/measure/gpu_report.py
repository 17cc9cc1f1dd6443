"""What one GPU really does, measured and set against its catalogue entry: the report of ``make test-gpu``.

    python -m aihw.measure.gpu_report --out gpu_report.md    # on a machine with a CUDA GPU

It times, on the visible GPU(s): dense matmuls per dtype (fp32, tf32, fp16, bf16, fp8 where the chip has it)
up to n = 8192; device-to-device copies of buffers several times larger than L2 (so HBM, not L2, sets the
rate); a decode-like chain of matrix-vector products whose weights exceed L2 (time per "token" against bytes ÷
measured bandwidth); INT8 (``torch._int_mm``) and 2:4 semi-structured sparse matmuls against fp16/bf16; and,
with two or more GPUs, NCCL all-reduce bus bandwidth. Each figure is printed beside the catalogue's datasheet
figure for the detected chip (:mod:`aihw.catalogue.detect`), or alone for a GPU the catalogue lacks.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from aihw.catalogue.detect import Detection
from aihw.measure import cuda_ops
from aihw.measure.roofline import Dtype, MeasureConfig, measure_device
from aihw.runtime.device import describe_device, detect_chip, gpu_capability
from aihw.runtime.timing import time_op

DTYPES: tuple[Dtype, ...] = ("fp32", "tf32", "fp16", "bf16", "fp8")
SIZES = (1024, 2048, 4096, 8192)


def _require_gpu() -> torch.device:
    if not torch.cuda.is_available():
        raise ValueError("no CUDA GPU is visible on this machine: the GPU report needs one")
    return torch.device("cuda", 0)


def _l2_bytes(device: torch.device) -> int:
    return int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 50 * 2**20))


def decode_like(device: torch.device, *, weight_bytes: int, bandwidth: float, dtype=torch.bfloat16) -> dict:
    """Time one "token" through a chain of square bf16 matrix-vector products holding ``weight_bytes`` of
    weights; predict it as weight bytes ÷ ``bandwidth`` (the measured copy bandwidth)."""
    width = 8192
    layers = max(1, round(weight_bytes / (width * width * 2)))
    weights = [torch.randn(width, width, device=device, dtype=dtype) / width**0.5 for _ in range(layers)]
    x = torch.randn(width, 1, device=device, dtype=dtype)

    def token() -> None:
        h = x
        for w in weights:
            h = w @ h

    timing = time_op(token, device=device, warmup=3, repeats=10)
    moved = layers * width * width * 2
    return {"layers": layers, "weight_bytes": moved, "seconds_per_token": timing.median,
            "predicted_seconds": moved / bandwidth, "measured_over_predicted": timing.median * bandwidth / moved}


def _torch_half(device: torch.device) -> tuple[str, torch.dtype]:
    """The chip's tensor-core 16-bit float (bf16, or fp16 on a T4), from :mod:`aihw.chips.capability`."""
    cap = gpu_capability(device)
    name = cap.half_dtype if cap is not None else "bf16"
    return name, {"bf16": torch.bfloat16, "fp16": torch.float16}[name]


def int8_operands(n: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """A (n, n) row-major and B (n, n) column-major int8: cuBLASLt's int8 GEMM takes B column-major (a row-major
    B fails on CUDA 13 builds)."""
    a8 = torch.randint(-8, 8, (n, n), device=device, dtype=torch.int8)
    return a8, torch.randint(-8, 8, (n, n), device=device, dtype=torch.int8).t()


def int8_speedup(device: torch.device, n: int = 8192) -> dict:
    """INT8 x INT8 -> INT32 matmul (``torch._int_mm``) against the chip's 16-bit tensor-core dtype."""
    if not hasattr(torch, "_int_mm"):
        return {"skipped": f"this torch ({torch.__version__}) has no torch._int_mm"}
    cap = gpu_capability(device)
    if cap is not None and (reason := cap.skip_reason("int8")) is not None:
        return {"skipped": reason}
    half, half_dtype = _torch_half(device)
    a8, b8 = int8_operands(n, device)
    a16, b16 = a8.to(half_dtype), b8.to(half_dtype)
    try:
        t8 = time_op(lambda: cuda_ops.int8_mm(a8, b8), device=device).median
    except RuntimeError as err:  # e.g. no int8 tensor-core kernel for this chip
        return {"skipped": f"torch._int_mm failed: {str(err).splitlines()[0]}"}
    t16 = time_op(lambda: a16 @ b16, device=device).median
    return {"n": n, "int8_tops": 2 * n**3 / t8 / 1e12, "against": half, f"{half}_tflops": 2 * n**3 / t16 / 1e12,
            "speedup": t16 / t8}


def sparse_24_speedup(device: torch.device, n: int = 8192) -> dict:
    """A 2:4 semi-structured sparse fp16 matmul against the dense one (compute capability >= 8.0)."""
    cap = gpu_capability(device)
    if cap is None or (reason := cap.skip_reason("2:4 sparse")) is not None:
        return {"skipped": reason or f"2:4 sparse tensor cores are CUDA only, not {device}"}
    try:
        from torch.sparse import to_sparse_semi_structured
    except ImportError:
        return {"skipped": "this torch has no torch.sparse.to_sparse_semi_structured"}
    mask = torch.tensor([1, 1, 0, 0], device=device, dtype=torch.float16).tile(n, n // 4)
    w = torch.randn(n, n, device=device, dtype=torch.float16) * mask
    x = torch.randn(n, n, device=device, dtype=torch.float16)
    try:
        ws = to_sparse_semi_structured(w)
        sparse = time_op(lambda: ws @ x, device=device).median
    except (RuntimeError, ValueError) as err:
        return {"skipped": f"2:4 sparse matmul failed: {str(err).splitlines()[0]}"}
    dense = time_op(lambda: w @ x, device=device).median
    return {"n": n, "speedup": dense / sparse}


def nccl_bus_bandwidth() -> dict:
    """NCCL all-reduce bus bandwidth over every visible GPU (needs two or more)."""
    count = torch.cuda.device_count()
    if count < 2:
        return {"skipped": f"{count} GPU visible: NCCL bus bandwidth needs two or more"}
    from aihw.parallel.collectives_bench import BenchConfig, measure

    size = 256 * 2**20
    return bus_summary(measure(BenchConfig(sizes_bytes=(size,), algorithms=("builtin",)), world_size=count,
                               timeout_s=300))


def bus_summary(rows: list[dict]) -> dict:
    """The fastest row of :func:`aihw.parallel.collectives_bench.measure`: ranks, bytes, seconds, bus bandwidth."""
    best = min(rows, key=lambda r: r["time_s"])
    return {"gpus": best["world_size"], "bytes": best["size_bytes"], "seconds": best["time_s"],
            "backend": best["backend"], "bus_bandwidth_bytes_per_s": best["busbw"]}


def collect(*, max_seconds: float = 180.0) -> dict:
    """Every measurement above on GPU 0 (and all GPUs for NCCL), with the catalogue's figures beside them."""
    device = _require_gpu()
    found: Detection = detect_chip(device)
    l2 = _l2_bytes(device)
    copy_mib = (float(max(4 * l2, 2**30) / 2**20),)
    m = measure_device(MeasureConfig(device=str(device), dtypes=DTYPES, matmul_sizes=SIZES, copy_mib=copy_mib,
                                     max_seconds=max_seconds))
    report: dict = {"device": describe_device(device), "catalogue_chip": found.chip.name if found.chip else None,
                    "catalogue_note": found.note, "l2_bytes": l2, "skipped": list(m.skipped)}
    measured_dtypes = sorted({p.dtype for p in m.matmul})
    report["matmul_tflops"] = {d: m.best_flops(d) / 1e12 for d in measured_dtypes}
    report["copy_bandwidth_bytes_per_s"] = m.best_bandwidth()
    if found.chip is not None:
        report["datasheet"] = {"bandwidth_bytes_per_s": found.chip.bandwidth_bytes_per_s,
                               "dense_tflops": {d: found.chip.peak_flops(d) / 1e12 for d in measured_dtypes
                                                if d in found.chip.flops}}
    report["decode_like"] = decode_like(device, weight_bytes=max(8 * l2, 2**30),
                                        bandwidth=report["copy_bandwidth_bytes_per_s"])
    report["int8"] = int8_speedup(device)
    report["sparse_2_4"] = sparse_24_speedup(device)
    half, _ = _torch_half(device)
    report["half_dtype"] = half  # the 16-bit float this chip has tensor cores for (fp16 on a T4)
    cap = gpu_capability(device)
    report["capability_skips"] = {f: r for f in ("bf16", "tf32", "fp8", "int4 weight-only", "2:4 sparse")
                                  if cap is not None and (r := cap.skip_reason(f)) is not None}
    if "fp8" in report["matmul_tflops"] and half in report["matmul_tflops"]:
        report["fp8_over_half"] = report["matmul_tflops"]["fp8"] / report["matmul_tflops"][half]
    report["nccl"] = nccl_bus_bandwidth()
    return report


def to_markdown(report: dict) -> str:
    """The report as a short Markdown page."""
    dev = report["device"]
    sheet = report.get("datasheet", {})
    lines = [f"# GPU report: {dev.get('cuda_device_name', '?')} (capability {dev.get('cuda_capability', '?')})",
             "", f"Catalogue: {report['catalogue_note']}", "",
             "| dtype | measured TFLOP/s | datasheet dense TFLOP/s | measured / datasheet |", "|---|---|---|---|"]
    for dtype, tflops in report["matmul_tflops"].items():
        peak = sheet.get("dense_tflops", {}).get(dtype)
        lines.append(f"| {dtype} | {tflops:,.1f} | {peak:,.1f} | {tflops / peak:.2f} |" if peak
                     else f"| {dtype} | {tflops:,.1f} | — | — |")
    bw, peak_bw = report["copy_bandwidth_bytes_per_s"], sheet.get("bandwidth_bytes_per_s")
    lines += ["", f"Copy bandwidth (read + write, buffers ≥ 4 × L2): {bw / 1e9:,.0f} GB/s"
              + (f" = {bw / peak_bw:.2f} × the datasheet's {peak_bw / 1e9:,.0f} GB/s" if peak_bw else "")]
    d = report["decode_like"]
    lines.append(f"Decode-like matrix-vector chain ({d['weight_bytes'] / 1e9:.2f} GB of bf16 weights): "
                 f"{d['seconds_per_token'] * 1e3:.3f} ms per token, {d['measured_over_predicted']:.2f} × "
                 "bytes ÷ measured bandwidth")
    half = report.get("half_dtype", "bf16")
    for key, label in (("int8", f"INT8 (torch._int_mm) over {half}"), ("sparse_2_4", "2:4 sparse fp16 over dense")):
        item = report[key]
        lines.append(f"{label}: " + (item["skipped"] if "skipped" in item else f"{item['speedup']:.2f}×"))
    if "fp8_over_half" in report:
        lines.append(f"FP8 over {report.get('half_dtype', 'bf16')} (best matmul): {report['fp8_over_half']:.2f}×")
    n = report["nccl"]
    lines.append("NCCL all-reduce bus bandwidth: " + (n["skipped"] if "skipped" in n else
                                                      f"{n['bus_bandwidth_bytes_per_s'] / 1e9:,.0f} GB/s "
                                                      f"over {n['gpus']} GPUs"))
    if report["skipped"]:
        lines += ["", "Skipped: " + "; ".join(report["skipped"])]
    for feature, reason in report.get("capability_skips", {}).items():
        lines.append(f"Not measured on this chip: {feature}: {reason}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aihw.measure.gpu_report", description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="gpu_report.md", help="Markdown report (a .json beside it)")
    args = parser.parse_args(argv)
    try:
        report = collect()
    except ValueError as err:
        print(f"gpu_report: {err}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.write_text(to_markdown(report), encoding="utf-8")
    out.with_suffix(".json").write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
    print(to_markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
