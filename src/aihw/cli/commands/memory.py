"""``aihw memory``: how many bytes training or serving a model needs, per component and per device."""

from __future__ import annotations

import argparse

from aihw.cli import args as A
from aihw.cli.output import print_result
from aihw.memory.estimator import (
    COMPONENTS,
    GB,
    MODES,
    OPTIMIZERS,
    WEIGHT_PRECISIONS,
    GiB,
    MemoryConfig,
    estimate,
)
from aihw.memory.fit import chip_fit
from aihw.transformer.flops import RECOMPUTE_CHOICES
from aihw.transformer.shapes import list_presets, resolve_model


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "memory", help="memory needed to train or serve a model (weights, gradients, optimizer, activations, KV)",
        description="Examples: aihw memory --model llama-2-7b --mode infer --batch 8 --seq 4096; "
                    "aihw memory --params 7e9 --precision fp16 --optimizer sgd --no-master; "
                    "aihw memory --model llama-2-70b --zero 3 --dp 64 --recompute full --chip h100-sxm --json")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--model", help=f"architecture preset ({', '.join(list_presets())}) or a .toml model file")
    what.add_argument("--params", type=A.count, help="parameter count, e.g. 7e9 or 7B (model state only)")
    parser.add_argument("--precision", type=A.precision, default="bf16", help=f"weights: {', '.join(WEIGHT_PRECISIONS)}")
    parser.add_argument("--mode", default="train", help=" or ".join(MODES))
    parser.add_argument("--optimizer", default="adamw", help=", ".join(OPTIMIZERS))
    parser.add_argument("--no-master", action="store_true", help="no fp32 master copy of the weights")
    parser.add_argument("--batch", type=A.positive_int, default=1, help="micro-batch per replica / concurrent sequences")
    parser.add_argument("--seq", type=A.positive_int, default=None, help="tokens per sequence (default: model context)")
    parser.add_argument("--recompute", default="none", help=f"activation recomputation: {', '.join(RECOMPUTE_CHOICES)}")
    parser.add_argument("--dropout", action="store_true", help="count dropout masks (1 byte per value)")
    parser.add_argument("--zero", type=A.non_negative_int, default=0, help="ZeRO stage 0-3 over the dp replicas")
    parser.add_argument("--grad-precision", default="param",
                        help="param (gradients in the weight precision: the ZeRO paper's 16 B/param) or fp32 "
                             "(Megatron-LM's distributed optimizer: 18 B/param with bf16, 20 with fp16)")
    parser.add_argument("--attention", default="eager",
                        help="eager (s x s scores kept, the paper's count) or fused (FlashAttention)")
    parser.add_argument("--dp", type=A.positive_int, default=1, help="data-parallel degree")
    parser.add_argument("--tp", type=A.positive_int, default=1, help="tensor-parallel degree (divides heads)")
    parser.add_argument("--pp", type=A.positive_int, default=1, help="pipeline-parallel degree (divides layers)")
    parser.add_argument("--kv-precision", type=A.precision, default=None, help="KV-cache precision (default: activation precision)")
    parser.add_argument("--overhead", type=A.non_negative_float, default=0.0,
                        help="framework overhead and temporaries as a fraction of the rest")
    parser.add_argument("--chip", default=None, help="catalogue chip: does it fit, and how many are needed")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(run=run)


def config_from_args(args: argparse.Namespace) -> MemoryConfig:
    """Build (and validate) the MemoryConfig an ``aihw memory`` command line describes."""
    for name, allowed in (("mode", MODES), ("recompute", RECOMPUTE_CHOICES)):
        value = getattr(args, name)
        if value not in allowed:
            raise ValueError(f"unknown {name} {value!r}; allowed: {', '.join(allowed)}")
    if args.zero and args.mode == "infer":
        raise ValueError(f"--zero {args.zero} applies to training only (ZeRO shards gradients and optimizer "
                         "state); drop it with --mode infer")
    if args.zero and args.dp == 1:
        raise ValueError(f"--zero {args.zero} with --dp 1 shards nothing: ZeRO splits over data-parallel "
                         "replicas; give --dp > 1")
    if args.chip is not None and not args.chip.strip():
        raise ValueError("--chip is empty; give a catalogue chip name (see `aihw hardware list`)")
    model = None if args.model is None else resolve_model(args.model)
    return MemoryConfig(model=model, params=args.params, precision=args.precision, mode=args.mode,
                        optimizer=args.optimizer, master_weights=False if args.no_master else None,
                        batch=args.batch, seq=args.seq, recompute=args.recompute, dropout=args.dropout,
                        zero=args.zero, dp=args.dp, tp=args.tp, pp=args.pp, kv_precision=args.kv_precision,
                        overhead_fraction=args.overhead, grad_precision=args.grad_precision,
                        attention=args.attention)


def _fit(cfg: MemoryConfig, chip_name: str) -> dict:
    row = chip_fit(cfg, chip_name)
    fit = {key: row[key] for key in ("chip", "capacity_bytes", "quoted", "fits")}
    if cfg.mode == "train":
        fit["devices_per_zero_stage"] = {str(z): n for z, n in row["devices"].items()}
    else:
        fit["devices_tensor_then_pipeline"] = row["devices"]["tp/pp"]
    return fit


def _table(result: dict) -> str:
    lines = [f"{'component':<16}{'total GB':>12}{'total GiB':>12}{'per device GB':>15}{'per device GiB':>16}"]
    lines.append("-" * len(lines[0]))
    for key in COMPONENTS:
        tot, dev = result["breakdown"][key], result["per_device_breakdown"][key]
        lines.append(f"{key:<16}{tot / GB:>12.2f}{tot / GiB:>12.2f}{dev / GB:>15.2f}{dev / GiB:>16.2f}")
    lines.append("-" * len(lines[0]))
    tot, dev = result["total_bytes"], result["per_device_bytes"]
    lines.append(f"{'sum':<16}{tot / GB:>12.2f}{tot / GiB:>12.2f}{dev / GB:>15.2f}{dev / GiB:>16.2f}")
    lines.append(f"devices: {result['devices']} (dp x tp x pp)")
    lines += [f"- {a}" for a in result["assumptions"]]
    fit = result.get("fit")
    if fit:
        verdict = "fits" if fit["fits"] else "does NOT fit"
        lines.append(f"{fit['chip']} ({fit['quoted']}): per-device memory {verdict}.")
        for stage, n in fit.get("devices_per_zero_stage", {}).items():
            lines.append(f"  ZeRO stage {stage}: " + (f"{n} chip(s)" if n else "no data-parallel split fits"))
        if "devices_tensor_then_pipeline" in fit:
            n = fit["devices_tensor_then_pipeline"]
            lines.append("  serving, tensor then pipeline parallel: " + (f"{n} chip(s)" if n else "does not fit"))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)
    result = estimate(cfg).to_dict()
    if args.chip is not None:
        result["fit"] = _fit(cfg, args.chip)
    print_result(result, as_json=args.json, text=None if args.json else _table(result))
    return 0
