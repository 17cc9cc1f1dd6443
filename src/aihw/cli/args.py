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
from collections.abc import Callable
from typing import Any

COUNT_SUFFIXES = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
BYTE_SUFFIXES = {"": 1.0, "b": 1.0, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
                 "kib": 2.0**10, "mib": 2.0**20, "gib": 2.0**30, "tib": 2.0**40}
_NUMBER = re.compile(r"^\s*([-+]?[0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-z]*)\s*$", re.IGNORECASE)


def _split(text: str) -> tuple[float, str] | None:
    match = _NUMBER.match(str(text).replace("_", "").replace(",", ""))
    if not match:
        return None
    value = float(match.group(1))
    if not math.isfinite(value):  # 400 digits
        raise ValueError(f"must be at most {LIMIT:.3g} in magnitude, got {shorten(repr(text), 40)}")
    return value, match.group(2).lower()


def parse_count(text: str) -> float:
    """``'7B'`` -> 7e9, ``'1.5e9'`` -> 1.5e9, ``'70m'`` -> 7e7. ValueError on anything else."""
    parts = _split(text)
    if parts is None or parts[1] not in COUNT_SUFFIXES:
        raise ValueError("expected a count such as 7e9, 7B or 70M (suffixes K, M, B, T), "
                         f"got {shorten(repr(text), 40)}")
    return parts[0] * COUNT_SUFFIXES[parts[1]]


def parse_bytes(text: str) -> float:
    """``'80GB'`` -> 8e10, ``'16GiB'`` -> 16 * 2**30, ``'1.5e9'`` -> 1.5e9. ValueError on anything else."""
    parts = _split(text)
    if parts is None or parts[1] not in BYTE_SUFFIXES:
        raise ValueError(f"expected a size in bytes such as 80GB, 16GiB or 1.5e9 "
                         f"(suffixes KB, MB, GB, TB, KiB, MiB, GiB, TiB), got {shorten(repr(text), 40)}")
    return parts[0] * BYTE_SUFFIXES[parts[1]]


LIMIT = 1e30
"""The largest magnitude any numeric option accepts (FLOP budgets reach ~1e27; anything larger is a typo)."""

SMALLEST_FRACTION = 1e-12
"""The smallest positive plain number (``--mfu``, ``--efficiency``): below it a result underflows to 0."""

MAX_INT = 2**53
"""The largest whole number (degrees, batches, sequence lengths): every integer up to it is exact as a float."""


def shorten(text: object, limit: int = 80) -> str:
    """``text`` as printable one-line text: control characters escaped (``\\x1b``), and cut to about ``limit``
    characters with the total length noted. For values echoed back in messages and names printed to a terminal."""
    raw = str(text)
    shown = "".join(ch if ch.isprintable() or ch == " " else ascii(ch)[1:-1] for ch in raw)
    if len(shown) > limit:
        shown = f"{shown[:limit - 20]}...({len(raw)} characters)"
    return shown


def parse_numeric(text: str, *, kind: str = "count", integer: bool = False, minimum: float | None = None,
                  exclusive: bool = False, maximum: float = LIMIT) -> float:
    """The one parser behind every numeric option: ``text`` with an optional suffix (``kind`` ``count``: K, M, B,
    T; ``bytes``: KB ... TiB), then checked finite, within ``[minimum, maximum]`` (``minimum`` excluded if
    ``exclusive``), and whole if ``integer``. ValueError naming the (shortened) text and what is allowed."""
    value = parse_bytes(text) if kind == "bytes" else parse_count(text)
    shown = shorten(repr(text), 40)
    if not math.isfinite(value) or abs(value) > maximum:
        raise ValueError(f"must be at most {maximum:.3g} in magnitude, got {shown}")
    if minimum is not None and (value <= minimum if exclusive else value < minimum):
        relation = ">" if exclusive else ">="
        raise ValueError(f"must be {relation} {minimum:g}, got {shown}")
    if integer and not float(value).is_integer():
        raise ValueError(f"must be a whole number, got {shown}")
    return value


def _argparse_type(parse: Callable[[str], Any], name: str) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = name  # argparse names the type in some messages
    return convert


number = _argparse_type(lambda t: parse_numeric(t), "number")
"""Any count, sign allowed (the caller checks the range and names the value): ``--matmul 4K 4K 4K``."""

count = _argparse_type(lambda t: parse_numeric(t, integer=True, minimum=1), "count")
"""A whole count >= 1 (a float, since counts reach 1e27): ``--params 7B``, ``--compute 5.76e23``."""

byte_size = _argparse_type(lambda t: parse_numeric(t, kind="bytes", minimum=1), "byte size")
"""A number of bytes >= 1 (float): ``--bytes 80GB``."""

positive_int = _argparse_type(lambda t: int(parse_numeric(t, integer=True, minimum=1, maximum=MAX_INT)),
                              "positive integer")
"""A whole number >= 1, suffixes allowed: ``--seq 4K``, ``--nodes 4``."""

non_negative_int = _argparse_type(lambda t: int(parse_numeric(t, integer=True, minimum=0, maximum=MAX_INT)),
                                  "integer")
"""A whole number >= 0: ``--zero 0``."""

positive_float = _argparse_type(
    lambda t: parse_numeric(t, minimum=SMALLEST_FRACTION, exclusive=False), "positive number")
"""A positive plain number (fractions allowed, at least 1e-12): ``--mfu 0.4``."""

non_negative_float = _argparse_type(lambda t: parse_numeric(t, minimum=0), "non-negative number")
"""A number >= 0 (fractions allowed): ``--overhead 0.1``."""


def precision(text: str) -> str:
    """A precision name, case-insensitive: ``BF16`` -> ``bf16`` (validated against the allowed names later)."""
    return str(text).strip().lower()


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows ``(default: X)`` after each option's help, except where there is no default worth showing (None,
    False flags) or the help already says its default."""

    def _get_help_string(self, action: argparse.Action) -> str:
        help_text = action.help or ""
        if action.default in (None, False, argparse.SUPPRESS) or "default" in help_text:
            return help_text
        return super()._get_help_string(action) or ""


__all__ = ["parse_count", "parse_bytes", "parse_numeric", "shorten", "non_negative_float", "number", "count", "byte_size", "positive_int", "non_negative_int",
           "positive_float", "precision", "HelpFormatter"]
