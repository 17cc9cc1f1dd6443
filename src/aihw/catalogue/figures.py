"""Sourced figures in data catalogues: units, parsing and checking (standard library only).

Shared by the hardware catalogue (:mod:`aihw.catalogue.hardware`) and the network catalogue (:mod:`aihw.catalogue.networks`).
Every figure in a catalogue TOML is a table with ``value``, ``unit``, ``source`` (a URL or a key of
``[sources]``) and ``read`` (ISO date); :func:`parse_figure` checks it and converts it to its SI base unit.
Errors are ValueErrors that start with the catalogue's name and say where in the file the problem is.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# unit as written in the TOML -> (SI base unit, factor to the base unit)
UNITS: dict[str, tuple[str, float]] = {
    "FLOP/s": ("FLOP/s", 1.0), "GFLOP/s": ("FLOP/s", 1e9), "TFLOP/s": ("FLOP/s", 1e12),
    "PFLOP/s": ("FLOP/s", 1e15), "TOPS": ("op/s", 1e12), "POPS": ("op/s", 1e15),
    "GB": ("bytes", 1e9), "GiB": ("bytes", 2.0**30), "TB": ("bytes", 1e12),
    "GB/s": ("bytes/s", 1e9), "TB/s": ("bytes/s", 1e12), "Gbps": ("bytes/s", 1e9 / 8),
    "W": ("W", 1.0), "USD/hour": ("USD/hour", 1.0),
    "KiB": ("bytes", 2.0**10), "MiB": ("bytes", 2.0**20), "MB": ("bytes", 1e6),
    "count": ("count", 1.0), "generation": ("generation", 1.0), "FLOP/clock": ("FLOP/clock", 1.0),
}
FIGURE_KEYS = frozenset({"value", "unit", "source", "read", "note", "quoted"})


@dataclass(frozen=True)
class Figure:
    """One sourced number, stored in its SI base unit."""

    value: float   # in the base unit (FLOP/s, op/s, bytes, bytes/s, W, USD/hour)
    unit: str      # the base unit, e.g. "FLOP/s", "bytes", "bytes/s"
    quoted: str    # as the source gives it, e.g. "989.4 TFLOP/s"
    source: str    # URL
    read: str      # ISO date the figure was checked
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def catalogue_error(catalogue: str, where: str, message: str) -> ValueError:
    """The error every catalogue check raises: "<catalogue>: <where>: <message>"."""
    return ValueError(f"{catalogue}: {where}: {message}")


def check_keys(where: str, table: object, allowed: set[str] | frozenset[str], *,
               catalogue: str) -> dict[str, Any]:
    """``table`` itself if it is a dict with keys from ``allowed`` only; else a ValueError naming the rest."""
    if not isinstance(table, dict):
        raise catalogue_error(catalogue, where, f"expected a table, got {table!r}")
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise catalogue_error(catalogue, where, f"unknown field(s) {', '.join(unknown)}; "
                              f"allowed: {', '.join(sorted(allowed))}")
    return table


def check_sources(sources: object, *, catalogue: str) -> dict[str, str]:
    """The ``[sources]`` table (key -> http(s) URL), checked."""
    if not isinstance(sources, dict):
        raise catalogue_error(catalogue, "sources", f"expected a table of URLs, got {sources!r}")
    for key, url in sources.items():
        if not isinstance(url, str) or not re.match(r"https?://", url):
            raise catalogue_error(catalogue, f"sources.{key}", f"must be an http(s) URL, got {url!r}")
    return sources


def parse_figure(where: str, raw: object, sources: Mapping[str, str], base_units: tuple[str, ...],
                 allowed: set[str] | frozenset[str] = FIGURE_KEYS, *, catalogue: str) -> Figure:
    """Check one figure table and convert its value to the base unit (one of ``base_units``)."""
    raw = check_keys(where, raw, allowed, catalogue=catalogue)
    for field in ("value", "unit", "source", "read"):
        if field not in raw:
            raise catalogue_error(catalogue, where, f"missing '{field}'")
    unit, value = raw["unit"], raw["value"]
    if unit not in UNITS:
        raise catalogue_error(catalogue, where, f"unknown unit {unit!r}; allowed: {', '.join(UNITS)}")
    base, factor = UNITS[unit]
    if base not in base_units:
        raise catalogue_error(catalogue, where,
                              f"unit {unit!r} measures {base}, expected {' or '.join(base_units)}")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise catalogue_error(catalogue, where, f"value must be a positive number, got {value!r}")
    source = str(raw["source"])
    url = source if re.match(r"https?://", source) else sources.get(source)
    if url is None:
        raise catalogue_error(catalogue, where, f"unknown source {source!r}; use a URL or a key of [sources]")
    read = raw["read"]
    try:
        date = read if isinstance(read, datetime.date) else datetime.date.fromisoformat(read)
        read = date.isoformat()
    except (TypeError, ValueError):
        raise catalogue_error(catalogue, where,
                              f"'read' must be an ISO date (YYYY-MM-DD), got {read!r}") from None
    quoted = str(raw.get("quoted", f"{value:g} {unit}"))
    return Figure(float(value) * factor, base, quoted, url, read, str(raw.get("note", "")))


def normalise_name(name: str) -> str:
    """Lower case without spaces, hyphens or underscores: how catalogue look-ups compare names."""
    return re.sub(r"[\s\-_]+", "", str(name).lower())
