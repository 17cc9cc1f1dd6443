"""``aihw choose``: from a training or serving objective to chips, layout, time, cost and energy on every chip."""

from __future__ import annotations

import argparse

from aihw.choosing import CRITERIA, Choice, Estimate, ServingObjective, TrainingObjective, choose
from aihw.cli import args as A
from aihw.cli.output import print_result
from aihw.scaling import METHODS
from aihw.transformer.shapes import list_presets

OBJECTIVES = ("train", "serve")
TRAIN_ONLY = ("params", "tokens", "flops", "method", "deadline_days", "budget_usd", "chips", "seq", "batch_tokens",
              "optimizer")
SERVE_ONLY = ("rate", "prompt", "output", "ttft_ms", "tpot_ms", "kv_precision")
DEFAULT_MODEL = "llama-2-7b"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "choose", help="choose hardware: chips, layout, time, cost and energy of an objective on every chip",
        description="Examples: aihw choose --model llama-2-7b --deadline-days 30 [--sort time] [--json]; "
                    "aihw choose --params 7B --budget-usd 50000; aihw choose --model llama-2-70b --chips 8 "
                    "--tokens 1B; aihw choose --objective serve --model llama-2-70b --rate 10 --prompt 1024 "
                    "--output 256 --ttft-ms 1000 --tpot-ms 50. Every catalogue chip is tried unless --chip names some.")
    parser.add_argument("--objective", default="train", choices=OBJECTIVES, help="train a model or serve one")
    parser.add_argument("--model", default=None,
                        help=f"preset ({', '.join(list_presets())}) or a .toml model file (default: {DEFAULT_MODEL} "
                             "unless --params or --flops)")
    parser.add_argument("--chip", default=None, help="only these catalogue chips, comma-separated (default: all)")
    parser.add_argument("--sort", default="cost", choices=CRITERIA, help="order of the chips that can do it")
    parser.add_argument("--precision", type=A.precision, default="bf16", help="training or weight precision")
    train = parser.add_argument_group("training objective")
    train.add_argument("--params", type=A.count, default=None,
                       help="parameter count, shaped like Llama 2 (instead of --model)")
    train.add_argument("--tokens", type=A.count, default=None,
                       help="training tokens (default: compute-optimal for the model's size, by --method)")
    train.add_argument("--flops", type=A.count, default=None,
                       help="compute budget in FLOP: the compute-optimal size and tokens (or the tokens for --model)")
    train.add_argument("--method", default=None, choices=METHODS,
                       help="scaling law for compute-optimal sizes (default: epoch-approach3)")
    train.add_argument("--deadline-days", type=A.positive_float, default=None, help="finish within this many days")
    train.add_argument("--budget-usd", type=A.positive_float, default=None, help="spend at most this, at dated prices")
    train.add_argument("--chips", type=A.positive_int, default=None,
                       help="a fixed number of chips (8: one node) instead of sizing the run")
    train.add_argument("--seq", type=A.positive_int, default=None, help="tokens per sequence (default 4096)")
    train.add_argument("--batch-tokens", type=A.positive_int, default=None,
                       help="tokens per optimizer step (default 4194304, Llama 2's 4M)")
    train.add_argument("--optimizer", default=None, help="adamw (default), adam, adam8bit, sgd_momentum, sgd")
    serve = parser.add_argument_group("serving objective (--objective serve)")
    serve.add_argument("--rate", type=A.positive_float, default=None, help="requests per second")
    serve.add_argument("--prompt", type=A.positive_int, default=None, help="prompt tokens per request (default 1024)")
    serve.add_argument("--output", type=A.positive_int, default=None, help="output tokens per request (default 256)")
    serve.add_argument("--ttft-ms", type=A.positive_float, default=None,
                       help="time-to-first-token target, ms (default 1000)")
    serve.add_argument("--tpot-ms", type=A.positive_float, default=None,
                       help="time-per-output-token target, ms (default 50)")
    serve.add_argument("--kv-precision", type=A.precision, default=None, help="KV cache precision (default bf16)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(run=run)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _chip_names(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if not names:
        raise ValueError(f"--chip needs at least one catalogue chip name, got {text!r}")
    return names


def objective_from_args(args: argparse.Namespace) -> TrainingObjective | ServingObjective:
    """Build (and validate) the objective an ``aihw choose`` command line describes."""
    given = [n for n in (SERVE_ONLY if args.objective == "train" else TRAIN_ONLY) if getattr(args, n) is not None]
    if given:
        other = "serve" if args.objective == "train" else "train"
        raise ValueError(f"{_flag(given[0])} belongs to a {other} objective; add --objective {other} or leave it out")
    chips = _chip_names(args.chip)
    if args.objective == "serve":
        if args.rate is None:
            raise ValueError("a serving objective needs --rate (requests per second)")
        extra = {k: v for k, v in (("prompt", args.prompt), ("output", args.output)) if v is not None}
        if args.ttft_ms is not None:
            extra["ttft_s"] = args.ttft_ms / 1e3
        if args.tpot_ms is not None:
            extra["tpot_s"] = args.tpot_ms / 1e3
        return ServingObjective(model=args.model or DEFAULT_MODEL, rate=args.rate, precision=args.precision,
                                kv_precision=args.kv_precision, chip_names=chips, criterion=args.sort, **extra)
    model = args.model if args.model is not None or args.params is not None or args.flops is not None \
        else DEFAULT_MODEL
    extra = {k: getattr(args, k) for k in ("seq", "batch_tokens", "optimizer", "method")
             if getattr(args, k) is not None}
    return TrainingObjective(model=model, params=args.params, tokens=args.tokens, flops=args.flops,
                             deadline_days=args.deadline_days, budget_usd=args.budget_usd,
                             chips=args.chips, precision=args.precision, chip_names=chips, criterion=args.sort,
                             **extra)


def _band(f: dict, scale: float, fmt: str) -> str:
    if f["value"] is None:
        return "-"
    text = format(f["value"] / scale, fmt)
    if f["low"] is not None and f["high"] is not None:
        text += f" ({format(f['low'] / scale, fmt)}-{format(f['high'] / scale, fmt)})"
    return text


def _training_table(r: dict) -> list[str]:
    head = f"{'#':>2} {'chip':<26} {'chips':>6}  {'days (band)':<20} {'USD (band), price kind':<36} {'MWh (band)':<18} layout"
    lines = [head, "-" * len(head)]
    for i, o in enumerate((o for o in r["options"] if o["feasible"]), 1):
        f = o["figures"]
        kind = (o["details"]["price"] or {}).get("kind", "")
        cost = _band(f["cost"], 1, ",.0f") + (f" {kind}" if kind else "")
        lines.append(f"{i:>2} {o['chip'][:26]:<26} {o['chips']:>6,}  {_band(f['time'], 86400, ',.1f'):<20} "
                     f"{cost:<36} {_band(f['energy'], 3.6e9, ',.1f'):<18} {o['layout']}")
    return lines


def _serving_table(r: dict) -> list[str]:
    head = (f"{'#':>2} {'chip':<26} {'chips':>6} {'TTFT ms':>8} {'TPOT ms':>8} {'USD/h':>9} {'USD/M tok':>10} "
            f"{'kWh/M tok':>10} layout")
    lines = [head, "-" * len(head)]
    for i, o in enumerate((o for o in r["options"] if o["feasible"]), 1):
        f = o["figures"]
        kind = (o["details"]["price"] or {}).get("kind", "")
        lines.append(f"{i:>2} {o['chip'][:26]:<26} {o['chips']:>6,} {_band(f['ttft'], 1e-3, ',.0f'):>8} "
                     f"{_band(f['tpot'], 1e-3, ',.1f'):>8} {_band(f['cost'], 1, ',.2f'):>9} "
                     f"{_band(f['cost_per_million'], 1, ',.2f'):>10} {_band(f['energy'], 3.6e6, ',.2f'):>10} "
                     f"{o['layout']}" + (f" ({kind} price)" if kind else ""))
    return lines


def _text(choice: Choice, r: dict) -> str:
    o = r["objective"]
    if choice.kind == "training":
        title = (f"Train {o['model']} ({o['params'] / 1e9:.2f}B parameters) on {o['tokens'] / 1e9:,.1f}B tokens"
                 + (f" within {o['deadline_days']:g} days" if o["deadline_days"] else "")
                 + (f" for at most ${o['budget_usd']:,.0f}" if o["budget_usd"] else "")
                 + (f" on {o['chips']} chips" if o["chips"] else "") + f"; sorted by {r['sorted_by']}")
        lines = [title, *_training_table(r)]
    else:
        title = (f"Serve {o['model']} at {o['rate']:g} requests/s ({o['prompt']} + {o['output']} tokens) within "
                 f"{o['ttft_s'] * 1e3:g} ms to first token and {o['tpot_s'] * 1e3:g} ms per output token; sorted by "
                 f"{r['sorted_by']}")
        lines = [title, *_serving_table(r)]
    cannot = [x for x in r["options"] if not x["feasible"]]
    if cannot:
        lines.append("Cannot meet the objective:")
        lines += [f"- {x['chip']} ({x['reason']}): {x['why']}" for x in cannot]
    best = choice.best
    if best is not None:
        notes = {k: f.note for k, f in best.figures.items() if isinstance(f, Estimate) and f.note}
        lines.append(f"Bands of the first row ({best.chip}):")
        lines += [f"- {k}: {v}" for k, v in notes.items()]
    lines += ["Assumptions:"] + [f"- {a}" for a in r["assumptions"]]
    return "\n".join(lines)


def impossible(choice: Choice) -> str:
    """One line saying why no chip can meet the objective: the reasons counted, and the closest miss."""
    counts: dict[str, int] = {}
    for o in choice.options:
        counts[str(o.reason)] = counts.get(str(o.reason), 0) + 1
    reasons = ", ".join(f"{k} ({v} chip{'s' if v > 1 else ''})" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))
    timed = [o for o in choice.options if o.figure("time") is not None]
    closest = ""
    if timed and choice.kind == "training":
        o = min(timed, key=lambda x: x.figure("time") or 0.0)
        closest = f"; fastest: {o.chips:,} x {o.chip}, {(o.figure('time') or 0.0) / 86400:,.3g} days"
    return f"no catalogue chip can meet this objective: {reasons}{closest}"


def run(args: argparse.Namespace) -> int:
    choice = choose(objective_from_args(args))
    if choice.best is None:
        raise ValueError(impossible(choice))
    result = choice.to_dict()
    print_result(result, as_json=args.json, text=None if args.json else _text(choice, result))
    return 0
