"""Input checks shared by every module: each error names the value and what is allowed."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable
from typing import Literal, TypeVar, overload

T = TypeVar("T")


@overload
def require_positive(name: str, value: object, *, integer: Literal[True]) -> int: ...
@overload
def require_positive(name: str, value: object, *, integer: Literal[False] = False) -> float: ...
def require_positive(name: str, value: object, *, integer: bool = False) -> float:
    """Return ``value`` if it is a finite number > 0 (an int if ``integer``), else raise ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        kind = "a positive integer" if integer else "a positive number"
        raise ValueError(f"{name} must be {kind}, got {value!r}")
    if integer and not float(value).is_integer():
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        kind = "a positive integer (>= 1)" if integer else "a positive finite number (> 0)"
        raise ValueError(f"{name} must be {kind}, got {value!r}")
    return int(value) if integer else value


def require_in_range(name: str, value: object, low: float, high: float, *,
                     low_inclusive: bool = True, high_inclusive: bool = True) -> float:
    """Return ``value`` if low <= value <= high (bounds inclusive or not), else raise ValueError."""
    lo, hi = ("[" if low_inclusive else "("), ("]" if high_inclusive else ")")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a number in {lo}{low}, {high}{hi}, got {value!r}")
    ok_low = value >= low if low_inclusive else value > low
    ok_high = value <= high if high_inclusive else value < high
    if not (ok_low and ok_high):
        raise ValueError(f"{name} must be in {lo}{low}, {high}{hi}, got {value!r}")
    return value


def close_matches(value: str, allowed: Iterable[str], n: int = 3) -> list[str]:
    """Closest names to ``value`` among ``allowed`` (case-insensitive)."""
    allowed = list(allowed)
    lowered = {a.lower(): a for a in allowed}
    hits = difflib.get_close_matches(str(value).lower(), list(lowered), n=n, cutoff=0.4)
    return [lowered[h] for h in hits]


def require_choice(name: str, value: T, allowed: Iterable[str]) -> T:
    """Return ``value`` if it is one of ``allowed``, else raise ValueError listing them and close matches."""
    allowed = list(allowed)
    if isinstance(value, str) and value in allowed:
        return value
    hint = close_matches(str(value), allowed)
    did_you_mean = f"; did you mean {', '.join(repr(h) for h in hint)}?" if hint else ""
    raise ValueError(f"unknown {name} {value!r}; allowed: {', '.join(allowed)}{did_you_mean}")
