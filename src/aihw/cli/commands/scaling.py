"""``aihw scaling``: compute-optimal parameters and tokens for a budget, training FLOPs, time and cost."""

from __future__ import annotations

import argparse

from aihw import scaling
from aihw._validate import require_positive
from aihw.cli import args as A
from aihw.cli.output import print_result


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "scaling", help="compute-optimal model size and tokens for a FLOP budget; training FLOPs, time and cost",
        description="Examples: aihw scaling --compute 5.76e23; aihw scaling --params 7e9 --tokens 2e12; "
                    "aihw scaling --params 7e9 --tokens 2e12 --chip h100 --chips 256 --mfu 0.4 --json")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--compute", type=A.count, metavar="FLOP",
                      help="training budget C in FLOP: prints N_opt and D_opt under each method")
    what.add_argument("--params", type=A.count, metavar="N", help="parameters, e.g. 7B (with --tokens): training FLOPs 6ND")
    parser.add_argument("--tokens", type=A.count, metavar="D", help="training tokens, e.g. 2T (with --params)")
    parser.add_argument("--chip", help="catalogue chip (see `aihw hardware list`): adds time and cost")
    parser.add_argument("--chips", type=A.positive_int, default=1, help="number of chips")
    parser.add_argument("--mfu", type=A.positive_float, default=0.4,
                        help="model FLOP utilisation, fraction of the dense peak (default 0.4: an assumption)")
    parser.add_argument("--precision", type=A.precision, default="bf16", help="precision of the peak used")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.params is not None and args.tokens is None:
        raise ValueError("--params needs --tokens (the number of training tokens D)")
    if args.compute is not None and args.tokens is not None:
        raise ValueError("--tokens goes with --params, not with --compute")
    result: dict = {"methods": {}}
    if args.compute is not None:
        flops = require_positive("--compute", args.compute)
        for name, a in scaling.compute_optimal_all(flops).items():
            result["methods"][name] = {"params": a.params, "tokens": a.tokens,
                                       "tokens_per_param": a.tokens_per_param, "label": scaling.METHOD_LABELS[name]}
    else:
        flops = scaling.training_flops(args.params, args.tokens)
        result["params"], result["tokens"] = args.params, args.tokens
    result["flops"] = flops
    if args.chip:
        run_ = scaling.training_run(flops, args.chip, chips=args.chips, mfu=args.mfu, precision=args.precision)
        result["run"] = {"chip": run_.chip, "chips": run_.chips, "mfu": run_.mfu, "precision": run_.precision,
                         "seconds": run_.seconds, "days": run_.days, "chip_hours": run_.chip_hours,
                         "usd": run_.usd}
    print_result(result, as_json=args.json, text=None if args.json else _text(result))
    return 0


def _text(result: dict) -> str:
    flops, lines = result["flops"], []
    lines.append(f"training compute C = {flops:.3e} FLOP (6·N·D)")
    if result["methods"]:
        width = max(len(m) for m in result["methods"])
        lines.append(f"{'method':<{width}}  {'params':>10}  {'tokens':>10}  {'tokens/param':>12}")
        for name, m in result["methods"].items():
            lines.append(f"{name:<{width}}  {m['params']:>10.3e}  {m['tokens']:>10.3e}  {m['tokens_per_param']:>12.1f}")
        lines.append("approach 1: Hoffmann et al. 2022 Table 3; epoch-approach3: Besiroglu et al. 2024 "
                     "(arXiv:2404.10102); hoffmann-approach3-rounded is biased, shown for comparison.")
    if "run" in result:
        r = result["run"]
        cost = f", {r['usd']:,.0f} USD at the catalogue's price snapshot" if r["usd"] is not None else \
            " (no price for this chip in the catalogue)"
        lines.append(f"on {r['chips']} x {r['chip']} at {100 * r['mfu']:.0f}% MFU ({r['precision']} dense peak): "
                     f"{r['days']:,.2f} days, {r['chip_hours']:,.0f} chip-hours{cost}")
    return "\n".join(lines)
