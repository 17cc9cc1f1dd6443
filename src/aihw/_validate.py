"""Input checks shared by every module: each error names the value and what is allowed."""

from __future__ import annotations

import difflib
import math
import numbers
import sys
from collections.abc import Iterable
from typing import Literal, TypeVar, overload

T = TypeVar("T")

FLOAT_MAX = sys.float_info.max  # ~1.8e308: an integer beyond it has no float value


class NonFiniteResult(ValueError):
    """A computed result overflowed to inf (or became NaN): the inputs are too large for the model."""


class TooLarge(ValueError):
    """A number (given, or computed from what was given) is beyond what a float holds, or inf/NaN."""


def as_number(value: object) -> object:
    """Python int/float for numpy and torch scalars (np.int64, np.float32, 0-d arrays/tensors); other values
    unchanged. Bools stay bools (callers refuse them)."""
    if isinstance(value, (bool, int, float)):
        return value
    item = getattr(value, "item", None)
    if getattr(value, "ndim", None) == 0 and callable(item):
        value = item()  # 0-d numpy array or torch tensor
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    return value


def coerce_numbers(config: object, *names: str) -> None:
    """In a frozen config's ``__post_init__``: replace numpy/torch scalars in fields ``names`` by Python
    numbers, so later arithmetic never yields tensors or numpy types (and the checks see plain numbers)."""
    for name in names:
        value = getattr(config, name)
        if value is not None:
            object.__setattr__(config, name, as_number(value))


def _is_real(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _finite(value: int | float) -> bool:
    """True for floats that are not inf/NaN and ints a float can hold (math.isfinite overflows on 10**400)."""
    if isinstance(value, int):
        return -FLOAT_MAX <= value <= FLOAT_MAX
    return math.isfinite(value)


def _shown(value: object) -> str:
    """repr, shortened for 400-digit integers."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:12]}...({len(text)} digits)"


@overload
def require_positive(name: str, value: object, *, integer: Literal[True]) -> int: ...
@overload
def require_positive(name: str, value: object, *, integer: Literal[False] = False) -> float: ...
def require_positive(name: str, value: object, *, integer: bool = False) -> float:
    """Return ``value`` if it is a finite number > 0 (an int if ``integer``), else raise ValueError.

    numpy and torch scalars are accepted and returned as Python numbers.
    """
    value = as_number(value)
    if not _is_real(value):
        kind = "a positive integer" if integer else "a positive number"
        raise ValueError(f"{name} must be {kind}, got {_shown(value)}")
    assert isinstance(value, (int, float))
    if not _finite(value):
        raise TooLarge(f"{name} must be a finite number no larger than {FLOAT_MAX:.3g}, got {_shown(value)}")
    if integer and not float(value).is_integer():
        raise ValueError(f"{name} must be a positive integer, got {_shown(value)}")
    if value <= 0:
        kind = "a positive integer (>= 1)" if integer else "a positive finite number (> 0)"
        raise ValueError(f"{name} must be {kind}, got {_shown(value)}")
    return int(value) if integer else value


def require_positive_int(name: str, value: object) -> int:
    """``require_positive(name, value, integer=True)`` typed as an int."""
    return int(require_positive(name, value, integer=True))


def require_finite_result(what: str, value: object) -> None:
    """Raise NonFiniteResult if ``value`` (a number, or dicts/lists/tuples of them) holds inf or NaN.

    For results computed from inputs that passed their checks but are too large for the model (1e308
    parameters): the caller names the inputs; JSON output can then always be strict.
    """
    path = _first_non_finite(value, what)
    if path is not None:
        raise NonFiniteResult(f"{path[0]} = {path[1]}: the result overflows; the inputs are too large "
                              "for this calculation")


def _first_non_finite(value: object, where: str) -> tuple[str, object] | None:
    if isinstance(value, float) and not math.isfinite(value):
        return where, value
    if isinstance(value, dict):
        items: Iterable = ((f"{where}.{k}", v) for k, v in value.items())
    elif isinstance(value, (list, tuple)):
        items = ((f"{where}[{i}]", v) for i, v in enumerate(value))
    else:
        return None
    for sub_where, sub in items:
        found = _first_non_finite(sub, sub_where)
        if found is not None:
            return found
    return None


def require_in_range(name: str, value: object, low: float, high: float, *,
                     low_inclusive: bool = True, high_inclusive: bool = True) -> float:
    """Return ``value`` if low <= value <= high (bounds inclusive or not), else raise ValueError."""
    lo, hi = ("[" if low_inclusive else "("), ("]" if high_inclusive else ")")
    value = as_number(value)
    if not _is_real(value) or not _finite(value):  # type: ignore[arg-type]
        raise ValueError(f"{name} must be a number in {lo}{low}, {high}{hi}, got {_shown(value)}")
    assert isinstance(value, (int, float))
    ok_low = value >= low if low_inclusive else value > low
    ok_high = value <= high if high_inclusive else value < high
    if not (ok_low and ok_high):
        raise ValueError(f"{name} must be in {lo}{low}, {high}{hi}, got {_shown(value)}")
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
