"""``aihw collectives``: alpha-beta predictions of all-reduce time on a chip's link and on whole clusters."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from aihw._validate import require_finite_result
from aihw.catalogue.hardware import get_chip
from aihw.cli import args as A
from aihw.cli.output import print_result
from aihw.comm import collectives as cc

DEFAULT_NETWORK = "InfiniBand NDR"
DEFAULT_GPU = "NVIDIA H100 SXM"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "collectives", help="predicted all-reduce time (alpha-beta model) on catalogue links and clusters",
        description="Examples: aihw collectives --bytes 1e9 --ranks 8 --chip h100; "
                    "aihw collectives --params 7e9 --nodes 4 --network ndr")
    size = parser.add_mutually_exclusive_group(required=True)
    size.add_argument("--bytes", type=A.byte_size, help="message size per rank: 1.5e9, 80GB, 512MiB")
    size.add_argument("--params", type=A.count, help="parameter count (7e9, 7B); message = params x --bytes-per-value")
    parser.add_argument("--bytes-per-value", type=A.positive_float, default=2.0, help="gradient bytes per parameter (bf16: 2)")
    parser.add_argument("--ranks", type=A.positive_int, default=8, help="ranks on the chip's link (one node)")
    parser.add_argument("--chip", default="H100 SXM", help="GPU or TPU from the catalogue (`aihw hardware list`)")
    parser.add_argument("--alpha-us", type=A.positive_float, default=cc.DEFAULT_CHIP_ALPHA_S * 1e6,
                        help="assumed per-message latency on the chip's link, microseconds")
    parser.add_argument("--network", default=None,
                        help="inter-node network (networks.toml); default InfiniBand NDR for GPUs, none shown for a TPU")
    parser.add_argument("--gpus-per-node", type=A.positive_int, default=8, help="GPUs per node of the GPU cluster")
    parser.add_argument("--nodes", type=A.positive_int, default=2, help="nodes of the GPU cluster")
    parser.add_argument("--tpu", default="TPU v5p", help="TPU of the slice estimate")
    parser.add_argument("--tpu-chips", type=A.positive_int, default=16, help="chips in the TPU slice")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    n_bytes = args.bytes if args.bytes is not None else args.params * args.bytes_per_value
    link = cc.link_from_chip(args.chip, alpha_s=args.alpha_us * 1e-6)
    per_algorithm = {name: cc.all_reduce_time(n_bytes, args.ranks, link=link, algorithm=name)
                     for name in cc.ALGORITHMS}
    network = args.network or DEFAULT_NETWORK
    is_tpu = get_chip(args.chip).kind == "tpu"
    tpu_only = is_tpu and args.network is None
    tpu = get_chip(args.chip).name if is_tpu else args.tpu
    gpu = DEFAULT_GPU if is_tpu else get_chip(args.chip).name  # the GPU-cluster lines need a GPU
    clusters = cc.cluster_estimates(n_bytes, chip=gpu, network=network,
                                    gpus_per_node=args.gpus_per_node, nodes=args.nodes, tpu=tpu,
                                    tpu_chips=args.tpu_chips)
    if tpu_only:  # a TPU answer: its own links only; the InfiniBand GPU cluster lines only when asked (--network)
        clusters = [c for c in clusters if network not in c.link and gpu not in c.label]
    result = {"n_bytes": n_bytes, "link": asdict(link), "all_reduce_s": per_algorithm,
              "clusters": [asdict(c) for c in clusters]}
    if args.json:
        print_result(result, as_json=True)
        return 0
    require_finite_result("result", result)  # an overflow is an error, not "inf ms"
    print(f"all-reduce of {n_bytes / 1e9:,.3f} GB per rank, {args.ranks} ranks on {link.name} "
          f"({link.bandwidth_bytes_per_s / 1e9:,.0f} GB/s per direction, alpha {link.alpha_s * 1e6:g} us):")
    for name, seconds in per_algorithm.items():
        print(f"  {name:>18}: {seconds * 1e3:,.3f} ms")
    print("clusters:")
    for c in clusters:
        print(f"  {c.label:<40} {c.time_s * 1e3:>10,.3f} ms  ({c.link})")
    return 0
