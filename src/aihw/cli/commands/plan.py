"""``aihw plan``: rank DP x TP x PP x CP x EP x ZeRO x recomputation layouts for training a model on a cluster."""

from __future__ import annotations

import argparse

from aihw.cli import args as A
from aihw.cli.output import print_result
from aihw.planning import RECOMPUTE, Cluster, Efficiency, PlanConfig, plan
from aihw.transformer.shapes import list_presets


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "plan", help="pick a parallel layout (data, tensor, pipeline, context, expert, ZeRO, recomputation)",
        description="Example: aihw plan --model llama-2-13b --chip h100-sxm --chips-per-node 8 --nodes 4 "
                    "--network 'InfiniBand NDR' --global-batch 512 --seq 4096 --top 5 [--json]. "
                    "Unpinned degrees are searched.")
    parser.add_argument("--model", default="llama-2-13b",
                        help=f"preset ({', '.join(list_presets())}) or a .toml model file")
    parser.add_argument("--chip", default="H100 SXM", help="catalogue chip (see `aihw hardware list`)")
    parser.add_argument("--chips-per-node", type=A.positive_int, default=8,
                        help="chips joined by the chip's interconnect (8: HGX node, 72: NVL72 rack, a TPU slice)")
    parser.add_argument("--nodes", type=A.positive_int, default=4, help="number of nodes")
    parser.add_argument("--network", default="auto",
                        help="inter-node port per chip (data/networks.toml); auto: InfiniBand NDR between GPU nodes, "
                             "the data-center network (DCN) between TPU slices")
    parser.add_argument("--nvls", action="store_true", help="NVLink SHARP all-reduces inside a node")
    parser.add_argument("--global-batch", type=A.positive_int, default=512, help="sequences per optimizer step")
    parser.add_argument("--seq", type=A.positive_int, default=None, help="tokens per sequence (default: model context)")
    parser.add_argument("--micro-batch", type=A.positive_int, default=None, help="sequences per micro-batch (default: search)")
    for name, what in (("tp", "tensor-parallel degree"), ("pp", "pipeline stages"), ("dp", "data-parallel degree"),
                       ("cp", "context-parallel degree (ring attention)"), ("ep", "expert-parallel degree"),
                       ("virtual-stages", "interleaved 1F1B chunks per pipeline device"),
                       ("micro-batches", "micro-batches per pipeline and step (m)")):
        parser.add_argument(f"--{name}", type=A.positive_int, default=None, help=f"pin the {what} (default: search)")
    parser.add_argument("--zero", default="0,1,2,3", help="ZeRO stage, or a comma list to search")
    parser.add_argument("--recompute", default=",".join(RECOMPUTE),
                        help="none, selective or full, or a comma list to search")
    parser.add_argument("--attention", default="fused", help="fused (FlashAttention) or eager")
    parser.add_argument("--sequence-parallel", action=argparse.BooleanOptionalAction, default=True,
                        help="Megatron sequence parallelism with TP (default: on)")
    parser.add_argument("--schedule", default="1f1b",
                        help="1f1b (interleaved with --virtual-stages > 1) or gpipe (same bubble, m micro-batches "
                             "of activations in flight)")
    parser.add_argument("--zero3-keep-gathered", action="store_true",
                        help="ZeRO-3 keeps parameters gathered across micro-batches (less traffic, more memory)")
    parser.add_argument("--precision", type=A.precision, default="bf16", help="bf16, fp16, tf32 or fp32")
    parser.add_argument("--grad-precision", default="fp32", help="fp32 (Megatron/DeepSpeed) or param")
    parser.add_argument("--optimizer", default="adamw", help="adamw, adam, sgd_momentum, sgd, adam8bit")
    parser.add_argument("--memory-fraction", type=A.positive_float, default=0.9, help="usable share of chip memory")
    parser.add_argument("--gemm-fraction", type=A.positive_float, default=None,
                        help="share of peak a large matmul reaches (default: the chip's published figure)")
    parser.add_argument("--top", type=A.positive_int, default=5, help="how many layouts to show")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(run=run)


def _int_list(name: str, text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"--{name} must be an integer or a comma-separated list of integers, got {text!r}") from None
    if not values:
        raise ValueError(f"--{name} needs at least one value, got {text!r}")
    return values


def config_from_args(args: argparse.Namespace) -> PlanConfig:
    """Build (and validate) the PlanConfig an ``aihw plan`` command line describes."""
    cluster = Cluster(chip=args.chip, chips_per_node=args.chips_per_node, nodes=args.nodes, network=args.network,
                      nvls=args.nvls)
    recompute = tuple(r.strip() for r in args.recompute.split(",") if r.strip())
    return PlanConfig(model=args.model, cluster=cluster, global_batch=args.global_batch, seq=args.seq,
                      micro_batch=args.micro_batch, precision=args.precision, grad_precision=args.grad_precision,
                      optimizer=args.optimizer, zero_stages=_int_list("zero", args.zero), recompute=recompute,
                      attention=args.attention, sequence_parallel=args.sequence_parallel,
                      memory_fraction=args.memory_fraction, tp=args.tp, pp=args.pp, dp=args.dp, cp=args.cp,
                      ep=args.ep, virtual_stages=args.virtual_stages, micro_batches=args.micro_batches,
                      zero3_keep_gathered=args.zero3_keep_gathered, schedule=args.schedule,
                      efficiency=Efficiency(gemm_fraction=args.gemm_fraction))


TERMS = ("compute", "bubble", "tp_comm", "cp_comm", "ep_comm", "pp_comm", "dp_comm", "overhead")


def _table(result: dict) -> str:
    head = (f"{'#':>3} {'DP':>5} {'TP':>3} {'PP':>3} {'CP':>3} {'EP':>3} {'v':>2} {'Z':>2} {'recomp':>9} {'b':>2} "
            f"{'m':>5} {'GB/chip':>8} {'step s':>8} " + " ".join(f"{t[:7]:>7}" for t in TERMS) + f" {'MFU':>5}")
    lines = [f"{result['model']} on {result['cluster']['nodes']} x {result['cluster']['chips_per_node']} "
             f"{result['cluster']['chip']} ("
             + (f"{result['cluster']['network']} between nodes" if result['cluster']['nodes'] > 1
                else "one node, no network") + "); global batch "
             f"{result['global_batch']} x {result['seq']} tokens; attention {result['attention']}", head,
             "-" * len(head)]
    for i, r in enumerate(result["layouts"], 1):
        t = r["breakdown"]
        lines.append(f"{i:>3} {r['dp']:>5} {r['tp']:>3} {r['pp']:>3} {r['cp']:>3} {r['ep']:>3} "
                     f"{r['virtual_stages']:>2} {r['zero']:>2} {r['recompute']:>9} {r['micro_batch']:>2} "
                     f"{r['micro_batches']:>5} {r['per_device_bytes'] / 1e9:>8.1f} {r['step_seconds']:>8.3g} "
                     + " ".join(f"{t[k]:>7.3g}" for k in TERMS) + f" {r['mfu']:>5.0%}")
    lines.append(f"{result['fitting']} layouts fit, {result['too_big']} too big for memory, "
                 f"{result['rejected_count']} with a batch that does not split.")
    lines += result["why"]
    lines += ["Assumptions:"] + [f"- {a}" for a in result["assumptions"]]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if args.top < 1:
        raise ValueError(f"--top must be >= 1, got {args.top}")
    result = plan(config_from_args(args)).to_dict(top=args.top)
    print_result(result, as_json=args.json, text=None if args.json else _table(result))
    return 0
