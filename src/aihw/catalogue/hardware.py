"""Hardware catalogue: peak FLOP/s, memory, bandwidth, interconnect, power and price of accelerator chips.

The facts live in ``data/hardware.toml`` (one table, every figure with unit, source URL and date read);
this module loads it, converts every figure to SI base units and checks it, so a typo fails loudly at
load time instead of quietly bending a roofline plot. Standard library only.

Conventions: GB = 1e9 bytes, GiB = 2**30 bytes; FLOP/s are dense (2:4-sparse figures live apart, in
``Chip.sparse_flops``); interconnect figures say direction (bidirectional or per-direction) and scope
(whole chip or one link).

``anatomy`` (optional per chip) holds what the chip is made of: for GPUs the SM count, register file and shared
memory per SM, L2, tensor-core generation and dense 16-bit FLOP per clock per SM; for TPUs the TensorCores per
chip, MXUs per TensorCore and MXU size. Each is a sourced figure like the rest (``ANATOMY_UNITS`` lists them).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Any, Literal, get_args

from aihw._validate import close_matches, read_bounded_text, require_choice
from aihw.catalogue.figures import (
    FIGURE_KEYS,
    Figure,
    catalogue_error,
    check_keys,
    check_sources,
    normalise_name,
    parse_figure,
)
from aihw.formats.precision import get_format

# The catalogue's precision columns, each a name in the registry of number formats (aihw.formats.precision): "fp8" is
# the E4M3/E5M2 tensor-core rate (one figure for both), "fp4" the E2M1 one.
PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")
Kind = Literal["gpu", "tpu"]
KINDS: tuple[str, ...] = get_args(Kind)
Direction = Literal["bidirectional", "per-direction"]
DIRECTIONS: tuple[str, ...] = get_args(Direction)
Scope = Literal["chip", "link"]
SCOPES: tuple[str, ...] = get_args(Scope)
# What a price snapshot is: a list price anyone pays by the hour ("on-demand"), a block of capacity reserved ahead
# for a fixed period ("capacity-block", e.g. AWS EC2 Capacity Blocks), or a committed-use / reserved contract.
PriceKind = Literal["on-demand", "capacity-block", "reserved"]
PRICE_KINDS: tuple[str, ...] = get_args(PriceKind)

_FIGURE_KEYS = FIGURE_KEYS
_INTERCONNECT_KEYS = _FIGURE_KEYS | {"name", "links", "direction", "scope"}
_PRICE_KEYS = _FIGURE_KEYS | {"provider", "region", "kind"}
_CHIP_KEYS = {"key", "name", "aliases", "vendor", "kind", "architecture", "year", "flops", "sparse_flops",
              "memory", "memory_bandwidth", "interconnect", "power", "price", "anatomy"}
# optional anatomy figures -> the base unit each must convert to
ANATOMY_UNITS: dict[str, str] = {
    "sm_count": "count", "register_file_per_sm": "bytes", "shared_memory_per_sm": "bytes", "l2_cache": "bytes",
    "tensor_core_generation": "generation", "dense_fp16_flop_per_clock_per_sm": "FLOP/clock",
    "tensorcores_per_chip": "count", "mxus_per_tensorcore": "count", "mxu_size": "count",
}


@dataclass(frozen=True)
class Interconnect:
    """Chip-to-chip link: ``bandwidth`` is quoted for ``direction`` and ``scope`` as the source gives it."""

    name: str
    links: int | None
    bandwidth: Figure
    direction: str  # "bidirectional" | "per-direction"
    scope: str      # "chip" | "link"

    def bandwidth_bytes_per_s(self, *, direction: str = "per-direction", scope: str = "chip") -> float:
        """Bandwidth in bytes/s converted to ``direction`` (factor 2) and ``scope`` (factor ``links``)."""
        require_choice("direction", direction, DIRECTIONS)
        require_choice("scope", scope, SCOPES)
        value = self.bandwidth.value
        if self.direction != direction:
            value = value / 2 if direction == "per-direction" else value * 2
        if self.scope != scope:
            if self.links is None:
                raise ValueError(f"{self.name}: cannot convert bandwidth from per-{self.scope} to "
                                 f"per-{scope}, the number of links is unknown")
            value = value / self.links if scope == "link" else value * self.links
        return value

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "links": self.links, "direction": self.direction, "scope": self.scope,
                "bandwidth": self.bandwidth.to_dict()}


@dataclass(frozen=True)
class Price:
    """Snapshot of a cloud price per chip-hour, and what kind of price it is (:data:`PRICE_KINDS`)."""

    figure: Figure
    provider: str
    region: str
    kind: str = "on-demand"

    def to_dict(self) -> dict[str, Any]:
        return {"provider": self.provider, "region": self.region, "kind": self.kind, **self.figure.to_dict()}


@dataclass(frozen=True)
class Chip:
    """One accelerator chip; every number is a sourced :class:`Figure` in SI base units."""

    key: str
    name: str
    vendor: str
    kind: str
    architecture: str
    year: int
    aliases: tuple[str, ...]
    flops: Mapping[str, Figure]         # dense peak per precision
    sparse_flops: Mapping[str, Figure]  # 2:4-sparse peak, only where the source prints one
    memory: Figure
    memory_bandwidth: Figure
    interconnect: Interconnect | None
    power: Figure | None
    price: Price | None
    anatomy: Mapping[str, Figure] = dataclasses.field(default_factory=lambda: MappingProxyType({}))

    def __hash__(self) -> int:
        return hash(self.key)

    @property
    def short_name(self) -> str:
        """Name without the vendor prefix, e.g. "H100 SXM"."""
        return self.name.removeprefix(self.vendor + " ")

    def peak_flops(self, precision: str) -> float:
        """Dense peak FLOP/s (op/s for int8) at ``precision`` (a catalogue column or an alias: "BF16")."""
        precision = catalogue_precision(precision)
        if precision not in self.flops:
            raise ValueError(f"{self.name} has no published dense {precision} peak; "
                             f"supported: {', '.join(self.flops)}")
        return self.flops[precision].value

    @property
    def memory_bytes(self) -> float:
        """Memory capacity in bytes."""
        return self.memory.value

    @property
    def bandwidth_bytes_per_s(self) -> float:
        """Memory bandwidth in bytes/s."""
        return self.memory_bandwidth.value

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable view; every figure with value/unit/quoted/source/read/note."""
        return {
            "key": self.key, "name": self.name, "vendor": self.vendor, "kind": self.kind,
            "architecture": self.architecture, "year": self.year, "aliases": list(self.aliases),
            "flops": {p: f.to_dict() for p, f in self.flops.items()},
            "sparse_flops": {p: f.to_dict() for p, f in self.sparse_flops.items()},
            "memory": self.memory.to_dict(), "memory_bandwidth": self.memory_bandwidth.to_dict(),
            "interconnect": self.interconnect.to_dict() if self.interconnect else None,
            "power": self.power.to_dict() if self.power else None,
            "price": self.price.to_dict() if self.price else None,
            "anatomy": {k: f.to_dict() for k, f in self.anatomy.items()},
        }

    def anatomy_value(self, name: str) -> float:
        """One anatomy figure in its base unit (bytes, count, FLOP/clock); ValueError naming what is listed."""
        require_choice("anatomy figure", name, ANATOMY_UNITS)
        if name not in self.anatomy:
            listed = ", ".join(self.anatomy) or "none"
            raise ValueError(f"{self.name}: the catalogue has no {name!r}; listed: {listed}")
        return self.anatomy[name].value


def catalogue_precision(name: str) -> str:
    """The catalogue column for a precision name or alias ("bf16", "BF16", "bfloat16" -> "bf16")."""
    fmt = get_format(name)
    for column in PRECISIONS:
        if get_format(column) is fmt:
            return column
    raise ValueError(f"the hardware catalogue has no {fmt.name} figures; its precisions: {', '.join(PRECISIONS)}")


# ---------------------------------------------------------------------------------------------- parsing

_CATALOGUE = "hardware catalogue"


def _fail(where: str, message: str) -> ValueError:
    return catalogue_error(_CATALOGUE, where, message)


def _check_keys(where: str, table: object, allowed: set[str] | frozenset[str]) -> dict[str, Any]:
    return check_keys(where, table, allowed, catalogue=_CATALOGUE)


def _parse_figure(where: str, raw: object, sources: Mapping[str, str], base_units: tuple[str, ...],
                  allowed: set[str] | frozenset[str] = _FIGURE_KEYS) -> Figure:
    return parse_figure(where, raw, sources, base_units, allowed, catalogue=_CATALOGUE)


def _parse_flops(where: str, raw: object, sources: Mapping[str, str]) -> Mapping[str, Figure]:
    table = raw if raw is not None else {}
    if not isinstance(table, dict):
        raise _fail(where, f"expected a table of precisions, got {table!r}")
    for precision in table:
        if precision not in PRECISIONS:
            raise _fail(f"{where}.{precision}", f"unknown precision {precision!r}; "
                        f"allowed: {', '.join(PRECISIONS)}")
    parsed = {p: _parse_figure(f"{where}.{p}", table[p], sources, ("FLOP/s", "op/s"))
              for p in PRECISIONS if p in table}
    return MappingProxyType(parsed)


def _parse_anatomy(where: str, raw: object, sources: Mapping[str, str]) -> Mapping[str, Figure]:
    table = _check_keys(where, raw if raw is not None else {}, set(ANATOMY_UNITS))
    return MappingProxyType({name: _parse_figure(f"{where}.{name}", table[name], sources, (ANATOMY_UNITS[name],))
                             for name in ANATOMY_UNITS if name in table})


def _parse_interconnect(where: str, raw: dict[str, Any], sources: Mapping[str, str]) -> Interconnect:
    raw = _check_keys(where, raw, _INTERCONNECT_KEYS)
    if not raw.get("name"):
        raise _fail(where, "missing 'name'")
    links = raw.get("links")
    if links is not None and (isinstance(links, bool) or not isinstance(links, int) or links < 1):
        raise _fail(where, f"'links' must be a positive integer, got {links!r}")
    for field, allowed in (("direction", DIRECTIONS), ("scope", SCOPES)):
        if raw.get(field) not in allowed:
            raise _fail(where, f"'{field}' must be one of {', '.join(allowed)}, got {raw.get(field)!r}")
    bandwidth = _parse_figure(where, raw, sources, ("bytes/s",), _INTERCONNECT_KEYS)
    return Interconnect(str(raw["name"]), links, bandwidth, raw["direction"], raw["scope"])


def _parse_price(where: str, raw: dict[str, Any], sources: Mapping[str, str]) -> Price:
    raw = _check_keys(where, raw, _PRICE_KEYS)
    for field in ("provider", "region", "kind"):
        if not raw.get(field):
            raise _fail(where, f"missing '{field}'" + (f" (one of {', '.join(PRICE_KINDS)})" if field == "kind"
                                                        else ""))
    if raw["kind"] not in PRICE_KINDS:
        raise _fail(f"{where}.kind", f"must be one of {', '.join(PRICE_KINDS)}, got {raw['kind']!r}")
    figure = _parse_figure(where, raw, sources, ("USD/hour",), _PRICE_KEYS)
    return Price(figure, str(raw["provider"]), str(raw["region"]), str(raw["kind"]))


def _check_sparse(where: str, dense: Mapping[str, Figure], sparse: Mapping[str, Figure]) -> None:
    for precision, figure in sparse.items():
        if precision not in dense:
            raise _fail(f"{where}.sparse_flops.{precision}", "sparse figure without a dense figure in flops")
        if dense[precision].value > figure.value:
            raise _fail(f"{where}.flops.{precision}", f"dense peak {dense[precision].quoted} exceeds the "
                        f"sparse peak {figure.quoted}; is a sparse figure posing as dense?")


def _parse_chip(index: int, raw: object, sources: Mapping[str, str]) -> Chip:
    if not isinstance(raw, dict) or not raw.get("key"):
        raise _fail(f"chip #{index}", "missing 'key'")
    where = f"chip {raw['key']!r}"
    _check_keys(where, raw, _CHIP_KEYS)
    for field in ("name", "vendor", "architecture", "year", "memory", "memory_bandwidth"):
        if field not in raw:
            raise _fail(where, f"missing '{field}'")
    if raw.get("kind") not in KINDS:
        raise _fail(f"{where}.kind", f"must be one of {', '.join(KINDS)}, got {raw.get('kind')!r}")
    if isinstance(raw["year"], bool) or not isinstance(raw["year"], int):
        raise _fail(f"{where}.year", f"must be an integer, got {raw['year']!r}")
    flops = _parse_flops(f"{where}.flops", raw.get("flops"), sources)
    sparse = _parse_flops(f"{where}.sparse_flops", raw.get("sparse_flops"), sources)
    _check_sparse(where, flops, sparse)
    return Chip(
        key=str(raw["key"]), name=str(raw["name"]), vendor=str(raw["vendor"]), kind=raw["kind"],
        architecture=str(raw["architecture"]), year=raw["year"],
        aliases=tuple(str(a) for a in raw.get("aliases", [])), flops=flops, sparse_flops=sparse,
        memory=_parse_figure(f"{where}.memory", raw["memory"], sources, ("bytes",)),
        memory_bandwidth=_parse_figure(f"{where}.memory_bandwidth", raw["memory_bandwidth"], sources,
                                       ("bytes/s",)),
        interconnect=(_parse_interconnect(f"{where}.interconnect", raw["interconnect"], sources)
                      if "interconnect" in raw else None),
        power=_parse_figure(f"{where}.power", raw["power"], sources, ("W",)) if "power" in raw else None,
        price=_parse_price(f"{where}.price", raw["price"], sources) if "price" in raw else None,
        anatomy=_parse_anatomy(f"{where}.anatomy", raw.get("anatomy"), sources),
    )


_normalise = normalise_name


def _check_unique_names(chips: tuple[Chip, ...]) -> None:
    owner: dict[str, str] = {}
    for chip in chips:
        for label in {_normalise(n) for n in (chip.key, chip.name, chip.short_name, *chip.aliases)}:
            if label in owner:
                raise _fail(f"chip {chip.key!r}", f"name or alias {label!r} is already used by chip "
                            f"{owner[label]!r}")
            owner[label] = chip.key


def _parse_catalogue(data: dict[str, Any]) -> tuple[Chip, ...]:
    sources = check_sources(data.get("sources", {}), catalogue=_CATALOGUE)
    raw_chips = data.get("chip", [])
    if not raw_chips:
        raise _fail("chip", "the catalogue lists no chips")
    chips = tuple(_parse_chip(i, raw, sources) for i, raw in enumerate(raw_chips))
    _check_unique_names(chips)
    return chips


@functools.lru_cache(maxsize=1)
def _default_catalogue() -> tuple[Chip, ...]:
    text = resources.files("aihw.catalogue").joinpath("data", "hardware.toml").read_text(encoding="utf-8")
    return _parse_catalogue(tomllib.loads(text))


def load_catalogue(path: str | os.PathLike[str] | None = None) -> tuple[Chip, ...]:
    """Load and validate a catalogue (default: the packaged ``data/hardware.toml``, cached).

    Raises ValueError naming the chip and field for any unknown unit, missing source or date, bad date,
    duplicate key or alias, unknown precision, sparse figure without a dense one, or dense > sparse.
    """
    if path is None:
        return _default_catalogue()
    text = read_bounded_text(path, what="hardware catalogue")  # a regular file of at most 1 MiB
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"hardware catalogue {os.fspath(path)!r} is not valid TOML: {error}") from None
    return _parse_catalogue(data)


# ---------------------------------------------------------------------------------------------- lookup

def list_chips(kind: str | None = None) -> list[Chip]:
    """All chips of the default catalogue, optionally only ``kind`` ("gpu" or "tpu")."""
    if kind is not None:
        require_choice("kind", kind, KINDS)
    return [c for c in load_catalogue() if kind is None or c.kind == kind]


def chip_names() -> list[str]:
    """Display names of all chips (each is accepted by :func:`get_chip`)."""
    return [c.name for c in load_catalogue()]


@functools.lru_cache(maxsize=1)
def _labels() -> dict[str, Chip]:
    """Every normalised key, name, short name and alias of the default catalogue, to its chip (built once)."""
    return {_normalise(n): c for c in load_catalogue() for n in (c.key, c.name, c.short_name, *c.aliases)}


def get_chip(name: str) -> Chip:
    """Chip by key, name or alias, ignoring case, spaces, hyphens and underscores."""
    labels = _labels()
    wanted = _normalise(name)
    if wanted in labels:
        return labels[wanted]
    # difflib order, then longest common prefix first, so "H1000" suggests H100 SXM and H100 PCIe
    candidates = sorted(close_matches(wanted, labels, n=len(labels)),
                        key=lambda label: -len(os.path.commonprefix([label, wanted])))
    closest: list[str] = []
    for label in candidates:
        if labels[label].short_name not in closest:
            closest.append(labels[label].short_name)
    hint = f"; closest: {', '.join(closest[:3])}" if closest else ""
    raise ValueError(f"unknown chip {name!r}{hint}; see `aihw hardware list`")
