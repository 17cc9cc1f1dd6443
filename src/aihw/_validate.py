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


MODEL_FILE_LIMIT = 1 << 20
"""The largest model or catalogue file read (bytes): 1 MiB, hundreds of times any real one."""

NAME_MAX = 255  # bytes in one path component (Linux, macOS)


def shown_path(path: object, limit: int = 80) -> str:
    """A path as one printable line of at most about ``limit`` characters (control characters escaped)."""
    text = str(path).encode("unicode_escape").decode("ascii")
    return text if len(text) <= limit else f"{text[:limit // 2 - 2]}...{text[-(limit // 2 - 2):]}"


def read_bounded_text(path: object, *, what: str, limit: int = MODEL_FILE_LIMIT) -> str:
    """The UTF-8 text of a regular file of at most ``limit`` bytes; one ValueError for anything else.

    FIFOs, devices (``/dev/zero``), directories and sockets are refused at once, without reading (the file is
    opened non-blocking, so a FIFO with no writer cannot hang); a file over ``limit`` is refused from its size,
    and the read itself stops at ``limit + 1`` bytes should the file grow meanwhile. Over-long names (a
    component over 255 bytes) and unreadable files are clean errors too.
    """
    import os
    import stat

    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{what} must be a path (str or os.PathLike), got {type(path).__name__}")
    name = shown_path(path)
    raw = os.fsencode(path)
    if b"\0" in raw:
        raise ValueError(f"{what} {name} contains a NUL character")
    if any(len(part) > NAME_MAX for part in raw.split(b"/")):
        raise ValueError(f"{what} {name}: a name in the path is longer than {NAME_MAX} bytes")
    try:
        fd = os.open(raw, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise ValueError(f"{what} {name} does not exist") from None
    except IsADirectoryError:
        raise ValueError(f"{what} {name} is a directory, not a file") from None
    except OSError as err:
        raise ValueError(f"{what} {name} cannot be opened: {err.strerror or err}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise ValueError(f"{what} {name} is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{what} {name} is not a regular file (a FIFO, device or socket is refused)")
        if info.st_size > limit:
            raise ValueError(f"{what} {name} is {info.st_size:,} bytes; the limit is {limit:,} bytes")
        chunks, total = [], 0
        while total <= limit:
            try:
                chunk = os.read(fd, min(1 << 16, limit + 1 - total))
            except OSError as err:
                raise ValueError(f"{what} {name} cannot be read: {err.strerror or err}") from None
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            raise ValueError(f"{what} {name} is over the limit of {limit:,} bytes")
    finally:
        os.close(fd)
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{what} {name} is not UTF-8 text: {err.reason} at byte {err.start}") from None


def require_bool(name: str, value: object) -> bool:
    """Return ``value`` as a bool if it is True or False (numpy bools too), else raise TypeError: ``"no"`` or
    ``1`` is not a switch (``"no"`` would otherwise count as true)."""
    if type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_"):  # numpy bool
        value = bool(value)
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {shown_path(repr(value), 60)} ({type(value).__name__})")
    return value


def require_non_negative(name: str, value: object) -> float:
    """Return ``value`` if it is a finite number >= 0 (numpy/torch scalars accepted), else raise ValueError."""
    value = as_number(value)
    if not _is_real(value) or not _finite(value):  # type: ignore[arg-type]
        raise ValueError(f"{name} must be a finite number >= 0, got {_shown(value)}")
    assert isinstance(value, (int, float))
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {_shown(value)}")
    return value


def require_instance(name: str, value: T, kind: type | tuple[type, ...]) -> T:
    """Return ``value`` if it is an instance of ``kind``, else raise TypeError naming what was given (instead
    of an AttributeError deep inside the calculation)."""
    if not isinstance(value, kind):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        allowed = " or ".join(k.__name__ for k in kinds)
        raise TypeError(f"{name} must be a {allowed}, got {type(value).__name__} {shown_path(repr(value), 60)}")
    return value
