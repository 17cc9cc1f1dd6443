"""``aihw plan``: rank DP x TP x PP x ZeRO x recomputation layouts for training a model on a cluster."""

from __future__ import annotations

import argparse
import json

from aihw.catalogue.hardware import get_chip
from aihw.commands import _args as A
from aihw.model_presets import list_presets
from aihw.planner import RECOMPUTE, Cluster, PlanConfig, plan

DEFAULT_NETWORK = "InfiniBand NDR"


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "plan", help="pick a parallel layout (data, tensor, pipeline, ZeRO, recomputation) for a cluster",
        description="Example: aihw plan --model llama-2-13b --chip h100-sxm --chips-per-node 8 --nodes 4 "
                    "--network 'InfiniBand NDR' --global-batch 512 --seq 4096 --mfu 0.4 --top 5 [--json]")
    parser.add_argument("--model", default="llama-2-13b", help=f"architecture preset: {', '.join(list_presets())}")
    parser.add_argument("--chip", default="H100 SXM", help="catalogue chip (see `aihw hardware list`)")
    parser.add_argument("--chips-per-node", type=A.positive_int, default=8, help="chips joined by the chip's interconnect")
    parser.add_argument("--nodes", type=A.positive_int, default=4, help="number of nodes")
    parser.add_argument("--network", default=None,
                        help="inter-node port per chip (data/networks.toml); default InfiniBand NDR")
    parser.add_argument("--global-batch", type=A.positive_int, default=512, help="sequences per optimizer step")
    parser.add_argument("--seq", type=A.positive_int, default=None, help="tokens per sequence (default: model context)")
    parser.add_argument("--micro-batch", type=A.positive_int, default=1, help="sequences per micro-batch")
    parser.add_argument("--tp", type=A.positive_int, default=None, help="pin the tensor-parallel degree (default: try all)")
    parser.add_argument("--pp", type=A.positive_int, default=None, help="pin the pipeline stages (default: try all)")
    parser.add_argument("--micro-batches", type=A.positive_int, default=None,
                        help="pin m, micro-batches per pipeline and step (default: global batch / (dp x micro-batch))")
    parser.add_argument("--mfu", type=A.positive_float, default=0.4, help="fraction of dense peak reached, in (0, 1]")
    parser.add_argument("--precision", type=A.precision, default="bf16", help="bf16, fp16, tf32 or fp32")
    parser.add_argument("--optimizer", default="adamw", help="adamw, adam, sgd_momentum, sgd, adam8bit")
    parser.add_argument("--memory-fraction", type=A.positive_float, default=0.9, help="usable share of chip memory")
    parser.add_argument("--recompute", default=",".join(RECOMPUTE), help="comma list of none, selective, full")
    parser.add_argument("--zero", default="0,1,2,3", help="comma list of ZeRO stages to consider")
    parser.add_argument("--top", type=A.positive_int, default=5, help="how many layouts to show")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(run=run)


def _int_list(name: str, text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"--{name} must be a comma-separated list of integers, got {text!r}") from None


def config_from_args(args: argparse.Namespace) -> PlanConfig:
    """Build (and validate) the PlanConfig an ``aihw plan`` command line describes."""
    cluster = Cluster(chip=args.chip, chips_per_node=args.chips_per_node, nodes=args.nodes,
                      network=args.network or DEFAULT_NETWORK)
    recompute = tuple(r.strip() for r in args.recompute.split(",") if r.strip())
    return PlanConfig(model=args.model, cluster=cluster, global_batch=args.global_batch, seq=args.seq,
                      micro_batch=args.micro_batch, mfu=args.mfu, precision=args.precision,
                      optimizer=args.optimizer, zero_stages=_int_list("zero", args.zero), recompute=recompute,
                      memory_fraction=args.memory_fraction, tp=args.tp, pp=args.pp,
                      micro_batches=args.micro_batches)


def _hide_network(args: argparse.Namespace) -> bool:
    """A TPU slice on one node never crosses the inter-node network: say nothing of InfiniBand unless asked."""
    return args.network is None and args.nodes == 1 and get_chip(args.chip).kind == "tpu"


def _table(result: dict, *, hide_network: bool = False) -> str:
    head = (f"{'#':>3} {'DP':>4} {'TP':>4} {'PP':>4} {'ZeRO':>5} {'recompute':>10} {'m':>5} {'GB/chip':>8} "
            f"{'step s':>8} {'compute':>8} {'bubble':>8} {'TP comm':>8} {'PP comm':>8} {'DP comm':>8} {'MFU':>5}")
    between = "" if hide_network else f" ({result['cluster']['network']} between nodes)"
    lines = [f"{result['model']} on {result['cluster']['nodes']} x {result['cluster']['chips_per_node']} "
             f"{result['cluster']['chip']}{between}; global batch "
             f"{result['global_batch']} x {result['seq']} tokens", head, "-" * len(head)]
    for i, r in enumerate(result["ranked"], 1):
        t = r["times_s"]
        lines.append(f"{i:>3} {r['dp']:>4} {r['tp']:>4} {r['pp']:>4} {r['zero']:>5} {r['recompute']:>10} "
                     f"{r['micro_batches']:>5} {r['memory_bytes'] / 1e9:>8.1f} {r['step_s']:>8.3g} "
                     f"{t['compute']:>8.3g} {t['bubble']:>8.3g} {t['tp_comm']:>8.3g} {t['pp_comm']:>8.3g} "
                     f"{t['dp_comm']:>8.3g} {r['mfu_achieved']:>5.0%}")
    lines.append(f"{result['fitting']} layouts fit, {result['too_big']} too big for memory, "
                 f"{len(result['rejected'])} with a batch that does not split.")
    lines += result["why"]
    assumptions = [a.split("; between nodes:")[0] + ("." if "; between nodes:" in a else "") if hide_network else a
                   for a in result["assumptions"]]
    lines += ["Assumptions:"] + [f"- {a}" for a in assumptions]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if args.top < 1:
        raise ValueError(f"--top must be >= 1, got {args.top}")
    result = plan(config_from_args(args)).to_dict(top=args.top)
    print(json.dumps(result, indent=2) if args.json else _table(result, hide_network=_hide_network(args)))
    return 0
