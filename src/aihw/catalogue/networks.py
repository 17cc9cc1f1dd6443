"""Inter-node networks (InfiniBand, Ethernet, TPU DCN): per-port bandwidth from ``data/networks.toml`` (stdlib).

Same figure conventions and parser (:mod:`aihw.catalogue.figures`) as the hardware catalogue: every figure has value,
unit, source URL and date read, and is converted to bytes/s at load time. Figures are per port (or per chip, where
a source prints that) and per direction. ``joins`` says which nodes a network joins: GPU nodes or TPU slices.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from importlib import resources

from aihw._validate import close_matches
from aihw.catalogue import figures

_CATALOGUE = "network catalogue"
_BANDWIDTH_KEYS = figures.FIGURE_KEYS | {"direction", "scope"}
_NETWORK_KEYS = {"key", "name", "aliases", "bandwidth", "joins"}
JOINS = ("gpu", "tpu")


@dataclass(frozen=True)
class Network:
    """One network technology: the bandwidth of one port, per direction, in bytes/s."""

    key: str
    name: str
    aliases: tuple[str, ...]
    bandwidth: figures.Figure  # bytes/s, per port, per direction
    joins: str = "gpu"  # "gpu": nodes of GPUs (InfiniBand, Ethernet); "tpu": TPU slices (Google's DCN)

    @property
    def bandwidth_bytes_per_s(self) -> float:
        """Per-port, per-direction bandwidth in bytes/s (e.g. 50e9 for a 400 Gb/s port)."""
        return self.bandwidth.value


def _parse_network(index: int, raw: object, sources: dict[str, str]) -> Network:
    if not isinstance(raw, dict) or not raw.get("key"):
        raise figures.catalogue_error(_CATALOGUE, f"network #{index}", "missing 'key'")
    where = f"network {raw['key']!r}"
    figures.check_keys(where, raw, _NETWORK_KEYS, catalogue=_CATALOGUE)
    for field in ("name", "bandwidth"):
        if field not in raw:
            raise figures.catalogue_error(_CATALOGUE, where, f"missing '{field}'")
    bw = figures.check_keys(f"{where}.bandwidth", raw["bandwidth"], _BANDWIDTH_KEYS, catalogue=_CATALOGUE)
    if bw.get("direction") != "per-direction" or bw.get("scope") not in ("port", "chip"):
        raise figures.catalogue_error(_CATALOGUE, f"{where}.bandwidth",
                                      "figures must be direction = 'per-direction', "
                                      f"scope = 'port' or 'chip', got {bw.get('direction')!r}, {bw.get('scope')!r}")
    joins = raw.get("joins", "gpu")
    if joins not in JOINS:
        raise figures.catalogue_error(_CATALOGUE, f"{where}.joins", f"must be one of {', '.join(JOINS)}, got {joins!r}")
    figure = figures.parse_figure(f"{where}.bandwidth", bw, sources, ("bytes/s",), _BANDWIDTH_KEYS,
                                  catalogue=_CATALOGUE)
    return Network(str(raw["key"]), str(raw["name"]), tuple(str(a) for a in raw.get("aliases", [])), figure,
                   str(joins))


def parse_networks(data: dict) -> tuple[Network, ...]:
    """Validate a parsed TOML document (``[sources]`` + ``[[network]]``) and return its networks."""
    sources = figures.check_sources(data.get("sources", {}), catalogue=_CATALOGUE)
    raw = data.get("network", [])
    if not raw:
        raise figures.catalogue_error(_CATALOGUE, "network", "the catalogue lists no networks")
    return tuple(_parse_network(i, r, sources) for i, r in enumerate(raw))


@functools.lru_cache(maxsize=1)
def load_networks() -> tuple[Network, ...]:
    """The packaged network catalogue (cached)."""
    text = resources.files("aihw.catalogue").joinpath("data", "networks.toml").read_text(encoding="utf-8")
    return parse_networks(tomllib.loads(text))


def get_network(name: str) -> Network:
    """Network by key, name or alias, ignoring case, spaces, hyphens and underscores."""
    labels = {figures.normalise_name(n): net for net in load_networks() for n in (net.key, net.name, *net.aliases)}
    if figures.normalise_name(name) in labels:
        return labels[figures.normalise_name(name)]
    names = [net.name for net in load_networks()]
    hint = close_matches(str(name), names + [net.key for net in load_networks()])
    did_you_mean = f"; did you mean {', '.join(repr(h) for h in hint)}?" if hint else ""
    raise ValueError(f"unknown network {name!r}; allowed: {', '.join(names)}{did_you_mean}")
