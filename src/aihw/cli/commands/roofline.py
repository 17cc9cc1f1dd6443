"""``aihw roofline``: where an operation sits on a chip's roofline and how long it takes at best."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from aihw._validate import require_finite_result
from aihw.catalogue.hardware import get_chip
from aihw.chips import roofline
from aihw.cli import args as A
from aihw.cli.output import print_result


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "roofline", help="roofline estimate of a matmul or elementwise op on a chip",
        description="Examples: aihw roofline --chip h100 --dtype bf16 --matmul 4096 4096 4096; "
                    "aihw roofline --chip v5e --elementwise 1e8; aihw roofline --chip a100-80gb")
    parser.add_argument("--chip", required=True, help="catalogue chip name (see `aihw hardware list`)")
    parser.add_argument("--dtype", type=A.precision, default="bf16", help="precision: fp64, fp32, tf32, bf16, fp16, fp8, int8, fp4")
    op = parser.add_mutually_exclusive_group()
    op.add_argument("--matmul", nargs=3, type=A.number, metavar=("M", "N", "K"), help="C[M,N] = A[M,K] @ B[K,N]")
    op.add_argument("--elementwise", type=A.number, metavar="N", help="elementwise add of N elements")
    op.add_argument("--intensity", type=A.positive_float, metavar="FLOP_PER_BYTE", help="attainable FLOP/s at this intensity")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(run=run)


def _as_int(name: str, value: float) -> int:
    if not float(value).is_integer() or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value:g}")
    return int(value)


def run(args: argparse.Namespace) -> int:
    chip = get_chip(args.chip)
    peak, bandwidth = chip.peak_flops(args.dtype), chip.bandwidth_bytes_per_s
    ridge = roofline.ridge_point(peak, bandwidth)
    result: dict = {"chip": chip.name, "dtype": args.dtype, "peak_flops": peak, "bandwidth_bytes_per_s": bandwidth,
                    "ridge_point_flop_per_byte": ridge}
    if args.matmul:
        m, n, k = (_as_int(x, v) for x, v in zip("MNK", args.matmul, strict=True))
        result["estimate"] = asdict(roofline.estimate_matmul(chip, m, n, k, args.dtype))
    elif args.elementwise is not None:
        count = _as_int("N", args.elementwise)
        result["estimate"] = asdict(roofline.estimate_elementwise(chip, count, args.dtype))
    elif args.intensity is not None:
        result["attainable_flops"] = roofline.attainable_flops(args.intensity, peak, bandwidth)
    if args.json:
        print_result(result, as_json=True)
        return 0
    require_finite_result("result", result)  # an overflow is an error, not "inf ms"
    print(f"{chip.name}, {args.dtype}: peak {peak / 1e12:,.1f} TFLOP/s (dense), "
          f"memory {bandwidth / 1e12:.2f} TB/s, ridge point {ridge:,.0f} FLOP/byte")
    if "estimate" in result:
        e = result["estimate"]
        print(f"{e['name']}: {e['flops']:.3g} FLOP, {e['bytes_moved']:.3g} bytes (minimum traffic), "
              f"intensity {e['intensity']:,.1f} FLOP/byte -> {e['bound']}-bound")
        print(f"attainable {e['attainable_flops'] / 1e12:,.2f} TFLOP/s "
              f"({100 * e['attainable_flops'] / peak:.1f}% of peak), time >= {e['time_s'] * 1e6:,.2f} us")
    if "attainable_flops" in result:
        print(f"at {args.intensity:g} FLOP/byte: attainable {result['attainable_flops'] / 1e12:,.2f} TFLOP/s")
    return 0
