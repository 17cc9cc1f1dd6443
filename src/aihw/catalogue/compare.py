"""Comparisons across the hardware catalogue: headline figures, price/performance, power, interconnects.

Every number comes from :mod:`aihw.catalogue.hardware`; nothing here is typed in. Prices are the catalogue's dated
on-demand snapshots, so "per dollar" figures are list-price figures, not what a large customer pays.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from aihw.catalogue.hardware import Chip, get_chip, list_chips


def _chips(chips: Iterable[str | Chip] | None) -> list[Chip]:
    if chips is None:
        return list_chips()
    return [get_chip(c) if isinstance(c, str) else c for c in chips]


def headline_rows(chips: Iterable[str | Chip] | None = None, precision: str = "bf16") -> list[dict]:
    """One row per chip: dense peak at ``precision`` (TFLOP/s), memory (as quoted), memory bandwidth (TB/s), ridge point."""
    rows = []
    for c in _chips(chips):
        peak = c.peak_flops(precision) if precision in c.flops else None
        rows.append({
            "chip": c.name, "kind": c.kind.upper(), "year": c.year,
            "peak_tflops": None if peak is None else peak / 1e12,
            "memory": c.memory.quoted, "memory_gb": c.memory_bytes / 1e9,
            "bandwidth_tbs": c.bandwidth_bytes_per_s / 1e12,
            "ridge": None if peak is None else peak / c.bandwidth_bytes_per_s,
            "power_w": c.power.value if c.power else None,
        })
    return rows


def price_performance_rows(chips: Iterable[str | Chip] | None = None, precision: str = "bf16") -> list[dict]:
    """Dense TFLOP/s per USD/hour and per watt, and USD per hour, for chips with a price at ``precision``."""
    rows = []
    for c in _chips(chips):
        if precision not in c.flops:
            continue
        peak = c.peak_flops(precision)
        price = c.price.figure.value if c.price else None
        rows.append({
            "chip": c.name, "kind": c.kind.upper(), "peak_tflops": peak / 1e12,
            "usd_per_hour": price, "tflops_per_usd_hour": None if not price else peak / 1e12 / price,
            "pflop_per_usd": None if not price else peak * 3600 / price / 1e15,
            "power_w": c.power.value if c.power else None,
            "tflops_per_watt": None if not c.power else peak / 1e12 / c.power.value,
            "price_source": f"{c.price.provider}, {c.price.region}, read {c.price.figure.read}" if c.price else None,
        })
    return rows


def interconnect_rows(chips: Iterable[str | Chip] | None = None) -> list[dict]:
    """Chip-to-chip bandwidth per chip, per direction and bidirectional, in GB/s."""
    rows = []
    for c in _chips(chips):
        ic = c.interconnect
        if ic is None:
            continue
        row: dict[str, Any] = {"chip": c.name, "link": ic.name, "links": ic.links, "quoted": ic.bandwidth.quoted,
               "as_quoted": f"{ic.direction}, per {ic.scope}"}
        try:
            row["per_direction_gbs"] = ic.bandwidth_bytes_per_s(direction="per-direction", scope="chip") / 1e9
            row["bidirectional_gbs"] = ic.bandwidth_bytes_per_s(direction="bidirectional", scope="chip") / 1e9
        except ValueError:  # per-link figure with an unknown link count
            row["per_direction_gbs"] = row["bidirectional_gbs"] = None
        row["hbm_over_link"] = (c.bandwidth_bytes_per_s / (row["per_direction_gbs"] * 1e9)
                                if row["per_direction_gbs"] else None)
        rows.append(row)
    return rows


def precision_rows(chips: Iterable[str | Chip] | None = None,
                   precisions: tuple[str, ...] = ("fp32", "tf32", "bf16", "fp8", "int8", "fp4")) -> list[dict]:
    """Dense peak (TFLOP/s or TOPS) per precision per chip; None where the chip has no such mode."""
    return [{"chip": c.name, **{p: (c.peak_flops(p) / 1e12 if p in c.flops else None) for p in precisions}}
            for c in _chips(chips)]


def tensor_core_share(chip: str | Chip, precision: str = "bf16") -> dict[str, float]:
    """Share of a GPU's dense peak that its matrix units deliver: tensor-core ``precision`` peak against that plus
    the fp32 peak of the ordinary ("CUDA") cores, both dense, from the catalogue.

    The sum assumes both kinds of unit could run at once; it overstates what CUDA cores add, so the share is a
    lower bound. Returns ``tensor_flops``, ``cuda_core_flops`` (FLOP/s) and ``share`` (0..1).
    """
    c = get_chip(chip) if isinstance(chip, str) else chip
    if c.kind != "gpu":
        raise ValueError(f"{c.name} is a {c.kind.upper()}: it has no CUDA cores to compare; pick a GPU")
    tensor, vector = c.peak_flops(precision), c.peak_flops("fp32")
    return {"tensor_flops": tensor, "cuda_core_flops": vector, "share": tensor / (tensor + vector)}


def efficiency_rows(chips: Iterable[str | Chip] | None = None, precision: str = "bf16", *,
                    achievable_fraction: float = 1.0) -> list[dict]:
    """Peak (or ``achievable_fraction`` of peak) dense FLOP/s per watt and per dollar-hour, per chip.

    Chips without a power figure get ``None`` per watt; without a price, ``None`` per dollar. Watts are the
    catalogue's TDP / max board power, so GFLOP/J is a ceiling at full power draw.
    """
    if not 0 < achievable_fraction <= 1:
        raise ValueError(f"achievable_fraction must be in (0, 1], got {achievable_fraction!r}")
    rows = []
    for c in _chips(chips):
        if precision not in c.flops:
            continue
        flops = c.peak_flops(precision) * achievable_fraction
        rows.append({
            "chip": c.name, "kind": c.kind.upper(), "tflops": flops / 1e12,
            "power_w": c.power.value if c.power else None,
            "gflop_per_joule": flops / c.power.value / 1e9 if c.power else None,
            "pflop_per_usd": flops * 3600 / c.price.figure.value / 1e15 if c.price else None,
        })
    return rows
