"""How the command line reads numbers and names: one parser per kind of value, used by every subcommand.

* counts (parameters, tokens, elements): ``7e9``, ``7B``, ``1.5e9``, ``70M``, ``4K`` (K = 1e3, M = 1e6,
  B or G = 1e9, T = 1e12; case-insensitive; ``_`` and ``,`` allowed as digit separators);
* byte sizes: ``80GB``, ``1.5e9``, ``16GiB``, ``512MiB`` (KB/MB/GB/TB are powers of 1000, KiB/MiB/GiB/TiB powers
  of 1024; a bare number is bytes);
* precisions: ``BF16``, ``bf16``, ``FP8_E4M3`` (case-insensitive; checked against the allowed names later, with the
  closest match in the message).

Each is an argparse ``type=``: bad text becomes ``argument --params: expected a count such as 7e9 or 7B, got
'7X'``, printed by the CLI as one line.
"""

from __future__ import annotations

import argparse
import math
import re

COUNT_SUFFIXES = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
BYTE_SUFFIXES = {"": 1.0, "b": 1.0, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
                 "kib": 2.0**10, "mib": 2.0**20, "gib": 2.0**30, "tib": 2.0**40}
_NUMBER = re.compile(r"^\s*([-+]?[0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-z]*)\s*$", re.IGNORECASE)


def _split(text: str) -> tuple[float, str] | None:
    match = _NUMBER.match(str(text).replace("_", "").replace(",", ""))
    if not match:
        return None
    value = float(match.group(1))
    return (value, match.group(2).lower()) if math.isfinite(value) else None


def parse_count(text: str) -> float:
    """``'7B'`` -> 7e9, ``'1.5e9'`` -> 1.5e9, ``'70m'`` -> 7e7. ValueError on anything else."""
    parts = _split(text)
    if parts is None or parts[1] not in COUNT_SUFFIXES:
        raise ValueError(f"expected a count such as 7e9, 7B or 70M (suffixes K, M, B, T), got {text!r}")
    return parts[0] * COUNT_SUFFIXES[parts[1]]


def parse_bytes(text: str) -> float:
    """``'80GB'`` -> 8e10, ``'16GiB'`` -> 16 * 2**30, ``'1.5e9'`` -> 1.5e9. ValueError on anything else."""
    parts = _split(text)
    if parts is None or parts[1] not in BYTE_SUFFIXES:
        raise ValueError(f"expected a size in bytes such as 80GB, 16GiB or 1.5e9 "
                         f"(suffixes KB, MB, GB, TB, KiB, MiB, GiB, TiB), got {text!r}")
    return parts[0] * BYTE_SUFFIXES[parts[1]]


def _argparse_type(parse, name: str):
    def convert(text: str):
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = name  # argparse names the type in some messages
    return convert


def _positive(value: float, text: str) -> float:
    if not value > 0:
        raise ValueError(f"must be > 0, got {text!r}")
    return value


def _whole(value: float, text: str) -> int:
    if not float(value).is_integer():
        raise ValueError(f"must be a whole number, got {text!r}")
    return int(value)


number = _argparse_type(parse_count, "number")
"""Any count, sign allowed (the caller checks the range and names the value): ``--matmul 4K 4K 4K``."""

count = _argparse_type(lambda t: _positive(parse_count(t), t), "count")
"""A positive count (float): ``--params 7B``."""

byte_size = _argparse_type(lambda t: _positive(parse_bytes(t), t), "byte size")
"""A positive number of bytes (float): ``--bytes 80GB``."""

positive_int = _argparse_type(lambda t: _whole(_positive(parse_count(t), t), t), "positive integer")
"""A whole number >= 1, suffixes allowed: ``--seq 4K``, ``--nodes 4``."""

non_negative_int = _argparse_type(
    lambda t: _whole(parse_count(t), t) if parse_count(t) >= 0 else _positive(-1.0, t), "integer")
"""A whole number >= 0: ``--zero 0``."""

positive_float = _argparse_type(lambda t: _positive(float(parse_count(t)), t), "positive number")
"""A positive plain number (fractions allowed): ``--mfu 0.4``."""


def precision(text: str) -> str:
    """A precision name, case-insensitive: ``BF16`` -> ``bf16`` (validated against the allowed names later)."""
    return str(text).strip().lower()


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows ``(default: X)`` after each option's help, except where there is no default worth showing (None,
    False flags) or the help already says its default."""

    def _get_help_string(self, action):
        help_text = action.help or ""
        if action.default in (None, False, argparse.SUPPRESS) or "default" in help_text:
            return help_text
        return super()._get_help_string(action)


__all__ = ["parse_count", "parse_bytes", "number", "count", "byte_size", "positive_int", "non_negative_int",
           "positive_float", "precision", "HelpFormatter"]
