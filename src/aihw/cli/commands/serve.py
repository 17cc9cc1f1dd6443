"""``aihw serve``: memory, time to first token, time per output token, throughput and cost of serving a model."""

from __future__ import annotations

import argparse

from aihw.cli import args as A
from aihw.cli.output import print_result
from aihw.serving.estimator import PRECISIONS, ServingConfig, estimate
from aihw.transformer.shapes import list_presets


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "serve", help="serving estimate: weights, KV cache, prefill and decode time, throughput, cost",
        description="Example: aihw serve --model llama-3-8b --chip 'H100 SXM' --precision bf16 --batch 16 "
                    "--context 4096 [--kv-precision fp8_e4m3] [--tp 2] [--prompt 1024] [--json]")
    parser.add_argument("--model", required=True,
                        help=f"architecture preset ({', '.join(list_presets())}) or a model file (.toml)")
    parser.add_argument("--chip", default="H100 SXM", help="catalogue chip (see `aihw hardware list`)")
    parser.add_argument("--precision", type=A.precision, default="bf16", help=f"weights: {', '.join(PRECISIONS)}")
    parser.add_argument("--kv-precision", type=A.precision, default=None, help="KV cache precision (default bf16; fp32 for fp32)")
    parser.add_argument("--batch", type=A.positive_int, default=1, help="concurrent sequences per decode step")
    parser.add_argument("--context", type=A.positive_int, default=4096, help="tokens per sequence in the KV cache")
    parser.add_argument("--prompt", type=A.positive_int, default=None, help="prompt tokens to prefill (default: context)")
    parser.add_argument("--tp", type=A.positive_int, default=1, help="tensor-parallel degree (divides heads and KV heads)")
    parser.add_argument("--memory-fraction", type=A.positive_float, default=0.9, help="usable share of each chip's memory")
    parser.add_argument("--efficiency", type=A.positive_float, default=1.0, help="fraction of peak FLOP/s and bandwidth")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(run=run)


def config_from_args(args: argparse.Namespace) -> ServingConfig:
    return ServingConfig(args.model, chip=args.chip, precision=args.precision, kv_precision=args.kv_precision,
                         batch=args.batch, context=args.context, prompt=args.prompt, tp=args.tp,
                         memory_fraction=args.memory_fraction, efficiency=args.efficiency)


def _gb(x: float) -> str:
    return f"{x / 1e9:.2f} GB"


def _table(r: dict) -> str:
    knee = r["knee_batch"] if r["knee_batch"] is not None else "none (KV reads grow as fast as the FLOPs)"
    cost = (f"${r['cost_per_million_tokens']:.3g} per million output tokens"
            if r["cost_per_million_tokens"] is not None else "no price in the catalogue")
    lines = [
        f"{r['model']} on {r['tp']} x {r['chip']}, weights {r['precision']}, KV {r['kv_precision']}, "
        f"batch {r['batch']} x context {r['context']} (prompt {r['prompt']})",
        f"weights                 {_gb(r['weights_bytes'])}",
        f"KV cache                {r['kv_cache_bytes_per_token'] / 1e3:.1f} kB per token, "
        f"{_gb(r['kv_cache_bytes'])} in all",
        f"per chip                {_gb(r['per_device_bytes'])} of {_gb(r['usable_bytes_per_device'])} usable: "
        + ("fits" if r["fits"] else "does NOT fit"),
        f"time to first token     {r['prefill_seconds'] * 1e3:.3g} ms ({r['prefill_bound']}-bound prefill)",
        f"time per output token   {r['decode_seconds_per_token'] * 1e3:.3g} ms ({r['decode_bound']}-bound: "
        f"memory {r['decode_memory_seconds'] * 1e3:.3g} ms, compute {r['decode_compute_seconds'] * 1e3:.3g} ms, "
        f"all-reduce {r['decode_comm_seconds'] * 1e3:.3g} ms)",
        f"throughput              {r['tokens_per_second']:.4g} tokens/s ({cost})",
        f"largest batch           {r['max_batch']} sequences of {r['context']} tokens "
        f"({r['max_cached_tokens']:,} KV tokens)",
        f"knee batch              {knee}; weight matmuls alone: {r['knee_batch_weights']}",
        "Assumptions:",
    ]
    return "\n".join(lines + [f"- {a}" for a in r["assumptions"]])


def run(args: argparse.Namespace) -> int:
    result = estimate(config_from_args(args)).to_dict()
    print_result(result, as_json=args.json, text=None if args.json else _table(result))
    return 0
