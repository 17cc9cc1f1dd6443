"""Inter-node networks (InfiniBand, Ethernet): per-port bandwidth from ``data/networks.toml`` (standard library).

Same figure conventions as the hardware catalogue (:mod:`aihw.hardware`): every figure has value, unit,
source URL and date read, and is converted to bytes/s at load time. Figures are per port and per direction.
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass
from importlib import resources

from aihw._validate import close_matches
from aihw.hardware import _FIGURE_KEYS, Figure, _check_keys, _fail, _parse_figure

_BANDWIDTH_KEYS = _FIGURE_KEYS | {"direction", "scope"}
_NETWORK_KEYS = {"key", "name", "aliases", "bandwidth"}


@dataclass(frozen=True)
class Network:
    """One network technology: the bandwidth of one port, per direction, in bytes/s."""

    key: str
    name: str
    aliases: tuple[str, ...]
    bandwidth: Figure  # bytes/s, per port, per direction

    @property
    def bandwidth_bytes_per_s(self) -> float:
        """Per-port, per-direction bandwidth in bytes/s (e.g. 50e9 for a 400 Gb/s port)."""
        return self.bandwidth.value


def _parse_network(index: int, raw: object, sources: dict[str, str]) -> Network:
    if not isinstance(raw, dict) or not raw.get("key"):
        raise _fail(f"network #{index}", "missing 'key'")
    where = f"network {raw['key']!r}"
    _check_keys(where, raw, _NETWORK_KEYS)
    for field in ("name", "bandwidth"):
        if field not in raw:
            raise _fail(where, f"missing '{field}'")
    bw = _check_keys(f"{where}.bandwidth", raw["bandwidth"], _BANDWIDTH_KEYS)
    if bw.get("direction") != "per-direction" or bw.get("scope") != "port":
        raise _fail(f"{where}.bandwidth", "figures must be direction = 'per-direction', scope = 'port', got "
                    f"{bw.get('direction')!r}, {bw.get('scope')!r}")
    figure = _parse_figure(f"{where}.bandwidth", bw, sources, ("bytes/s",), _BANDWIDTH_KEYS)
    return Network(str(raw["key"]), str(raw["name"]), tuple(str(a) for a in raw.get("aliases", [])), figure)


def parse_networks(data: dict) -> tuple[Network, ...]:
    """Validate a parsed TOML document (``[sources]`` + ``[[network]]``) and return its networks."""
    sources = data.get("sources", {})
    for key, url in sources.items():
        if not isinstance(url, str) or not re.match(r"https?://", url):
            raise _fail(f"sources.{key}", f"must be an http(s) URL, got {url!r}")
    raw = data.get("network", [])
    if not raw:
        raise _fail("network", "the catalogue lists no networks")
    return tuple(_parse_network(i, r, sources) for i, r in enumerate(raw))


@functools.lru_cache(maxsize=1)
def load_networks() -> tuple[Network, ...]:
    """The packaged network catalogue (cached)."""
    text = resources.files("aihw").joinpath("data", "networks.toml").read_text(encoding="utf-8")
    return parse_networks(tomllib.loads(text))


def _normalise(name: str) -> str:
    return re.sub(r"[\s\-_]+", "", str(name).lower())


def get_network(name: str) -> Network:
    """Network by key, name or alias, ignoring case, spaces, hyphens and underscores."""
    labels = {_normalise(n): net for net in load_networks() for n in (net.key, net.name, *net.aliases)}
    if _normalise(name) in labels:
        return labels[_normalise(name)]
    names = [net.name for net in load_networks()]
    hint = close_matches(str(name), names + [net.key for net in load_networks()])
    did_you_mean = f"; did you mean {', '.join(repr(h) for h in hint)}?" if hint else ""
    raise ValueError(f"unknown network {name!r}; allowed: {', '.join(names)}{did_you_mean}")
