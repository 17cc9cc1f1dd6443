"""``aihw hardware list`` and ``aihw hardware show NAME [--json]``: the chip catalogue."""

from __future__ import annotations

import argparse
import json
import textwrap

from aihw.catalogue.hardware import get_chip, list_chips

WIDTH = 100  # `aihw hardware show` fits a 100-column terminal
LABEL_WIDTH = 48


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("hardware", help="list chips in the catalogue or show one")
    hw = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=type(parser))
    hw.required = True
    lst = hw.add_parser("list", help="one line per chip")
    lst.add_argument("--kind", choices=["gpu", "tpu"], help="only GPUs or only TPUs")
    lst.add_argument("--json", action="store_true", help="machine-readable output")
    lst.set_defaults(run=run_list)
    show = hw.add_parser("show", help="every figure of one chip, with units and sources")
    show.add_argument("name", help="chip name, e.g. 'H100 SXM', h100, v5e")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.set_defaults(run=run_show)


def _tera(value: float) -> str:
    return f"{value / 1e12:,.1f}"


def run_list(args: argparse.Namespace) -> int:
    chips = list_chips(args.kind)
    if args.json:
        print(json.dumps([c.to_dict() for c in chips], indent=2))
        return 0
    header = f"{'key':<14} {'name':<28} {'kind':<4} {'bf16 TFLOP/s':>12} {'memory':>10} {'mem TB/s':>9}"
    print(header)
    print("-" * len(header))
    for c in chips:
        bf16 = _tera(c.peak_flops("bf16")) if "bf16" in c.flops else "-"
        print(f"{c.key:<14} {c.name:<28} {c.kind:<4} {bf16:>12} {c.memory.quoted:>10} "
              f"{c.bandwidth_bytes_per_s / 1e12:>9.2f}")
    print("FLOP/s are dense (no 2:4 sparsity); mem TB/s is the memory bandwidth (HBM, or GDDR on T4/L4). "
          "`aihw hardware show NAME` gives every figure with its source.")
    return 0


def run_show(args: argparse.Namespace) -> int:
    chip = get_chip(args.name)
    data = chip.to_dict()
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    print(f"{chip.name}  ({chip.vendor} {chip.architecture}, {chip.year}, {chip.kind})")
    rows: list[tuple[str, dict]] = []
    for group in ("flops", "sparse_flops"):
        for precision, fig in data.get(group, {}).items():
            label = "dense" if group == "flops" else "SPARSE 2:4"
            rows.append((f"{precision} ({label})", fig))
    for field in ("memory", "memory_bandwidth", "power"):
        if data.get(field):
            rows.append((field.replace("_", " "), data[field]))
    ic = data.get("interconnect")
    if ic:
        rows.append((f"interconnect {ic['name']} ({ic['direction']}, per {ic['scope']})", ic["bandwidth"]))
    if data.get("price"):
        price = data["price"]
        rows.append((f"price ({price['provider']}, {price['region']})", price))
    print(_figures_text(rows))
    return 0


def _figures_text(rows: list[tuple[str, dict]], columns: int = WIDTH) -> str:
    """Figures, then their notes, then numbered sources, in ``columns`` columns (a URL is never broken: one
    longer than a line stands alone on its own line)."""
    sources: dict[str, int] = {}
    width = min(LABEL_WIDTH, max(len(label) for label, _ in rows))
    lines, notes = [], []
    for label, fig in rows:
        ref = sources.setdefault(fig["source"], len(sources) + 1)
        mark = f"[{ref}]"
        if fig.get("note"):
            notes.append((label, fig["note"]))
            mark += f" note {len(notes)}"
        if len(label) > width:  # a long label (a price's provider and region) gets a line of its own
            lines.append(f"  {label}")
            label = ""
        lines.append(f"  {label:<{width}}  {fig['quoted']:>16}  {mark}")
    if notes:
        lines.append("notes:")
        for i, (label, note) in enumerate(notes, 1):
            lines += textwrap.wrap(f"{i}. {label}: {note}", columns, initial_indent="  ", subsequent_indent="     ")
    lines.append("sources (date read):")
    read = {fig["source"]: fig["read"] for _, fig in rows}
    for url, ref in sources.items():
        entry = f"  [{ref}] {url} ({read[url]})"
        lines += [entry] if len(entry) <= columns else [f"  [{ref}] read {read[url]}:", url]
    return "\n".join(lines)
