"""Number formats used in deep learning: range, precision and size, computed from their bit layout.

Floating-point formats are described by exponent bits, mantissa bits and how the all-ones exponent is used:
IEEE-style formats (fp64, fp32, tf32, bf16, fp16, fp8 e5m2) reserve it for inf/NaN; fp8 e4m3 as defined by
Micikevicius et al. 2022 ("FP8 Formats for Deep Learning", arXiv:2209.05433) keeps it for numbers and only
the all-ones mantissa there is NaN, which is why its maximum is 448 rather than 240; fp4 e2m1 (OCP Microscaling
Formats spec v1.0, 2023) has no special values at all, so its maximum is 6.

:data:`FORMATS` is the package's one registry of number formats: name, aliases, bits, storage bytes, the torch
dtype's name (a string, so this module stays torch-free) and the range and precision that follow from the bit
layout. :func:`get_format` resolves a name or alias.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

from aihw._validate import close_matches, require_choice, shown_path

# How a float format spends its all-ones exponent (integers: "none").
#   "ieee":     reserved for inf and NaN (fp64, fp32, tf32, bf16, fp16, fp8 E5M2);
#   "nan_only": a normal binade, only the all-ones mantissa there is NaN (fp8 E4M3, torch's float8_e4m3fn);
#   "none":     every bit pattern is a finite number (fp4 E2M1, integers).
Special = Literal["ieee", "nan_only", "none"]
SPECIAL_CHOICES: tuple[str, ...] = get_args(Special)


@dataclass(frozen=True)
class NumberFormat:
    """One number format. For integers, exponent_bits = 0 and the range is the integer range."""

    name: str
    bits: int
    exponent_bits: int
    mantissa_bits: int
    special: Special = "ieee"
    integer: bool = False
    description: str = ""
    aliases: tuple[str, ...] = ()  # other names accepted for it (lower case; lookups ignore case)
    torch_dtype: str | None = None  # name of the torch dtype holding it (``getattr(torch, name)``); None: none
    storage_bits: int | None = None  # bits it occupies in memory when not ``bits`` (tf32 lives in fp32 words)

    def __post_init__(self) -> None:
        require_choice("special", self.special, SPECIAL_CHOICES)

    @property
    def bytes(self) -> float:
        """Storage per value in bytes (0.5 for 4-bit formats, 4 for tf32)."""
        return (self.storage_bits or self.bits) / 8

    @property
    def bias(self) -> int:
        return 2 ** (self.exponent_bits - 1) - 1 if self.exponent_bits else 0

    @property
    def max_value(self) -> float:
        """Largest finite value."""
        if self.integer:
            return float(2 ** (self.bits - 1) - 1)
        m = self.mantissa_bits
        if self.special == "ieee":
            max_exp = (2**self.exponent_bits - 2) - self.bias
            return (2 - 2.0**-m) * 2.0**max_exp
        max_exp = (2**self.exponent_bits - 1) - self.bias  # the all-ones exponent is a normal binade
        if self.special == "nan_only":  # its all-ones mantissa is NaN
            return (2 - 2.0 ** -(m - 1)) * 2.0**max_exp
        return (2 - 2.0**-m) * 2.0**max_exp

    @property
    def min_normal(self) -> float:
        """Smallest positive normal value (1 for integers)."""
        return 1.0 if self.integer else 2.0 ** (1 - self.bias)

    @property
    def min_subnormal(self) -> float:
        """Smallest positive value."""
        return 1.0 if self.integer else 2.0 ** (1 - self.bias - self.mantissa_bits)

    @property
    def epsilon(self) -> float:
        """Gap between 1 and the next representable value (1 for integers)."""
        return 1.0 if self.integer else 2.0**-self.mantissa_bits

    @property
    def decimal_digits(self) -> float:
        """Significant decimal digits, log10(2^(mantissa_bits + 1))."""
        return (self.mantissa_bits + 1) * math.log10(2) if not self.integer else math.log10(self.max_value)

    @property
    def dynamic_range_decades(self) -> float:
        """log10(max / smallest positive), the span of magnitudes in decades."""
        return math.log10(self.max_value / self.min_subnormal)


# THE registry of number formats: every module that names a precision (the hardware catalogue, the memory
# estimator, the roofline, the measurements, quantization) resolves the name here with :func:`get_format`.
# To add a format, add a row; give it the aliases people write for it and its torch dtype's name, if any.
FORMATS: dict[str, NumberFormat] = {
    f.name: f
    for f in (
        NumberFormat("fp64", 64, 11, 52, description="IEEE 754 double precision",
                     aliases=("float64", "double"), torch_dtype="float64"),
        NumberFormat("fp32", 32, 8, 23, description="IEEE 754 single precision",
                     aliases=("float32", "float", "single"), torch_dtype="float32"),
        NumberFormat("tf32", 19, 8, 10, description="NVIDIA TensorFloat-32: fp32 range, fp16 precision; "
                     "a tensor-core input mode, stored as 32 bits", aliases=("tensorfloat32",),
                     torch_dtype="float32", storage_bits=32),
        NumberFormat("bf16", 16, 8, 7, description="bfloat16: fp32 range, 8 bits of precision",
                     aliases=("bfloat16",), torch_dtype="bfloat16"),
        NumberFormat("fp16", 16, 5, 10, description="IEEE 754 half precision",
                     aliases=("float16", "half"), torch_dtype="float16"),
        NumberFormat("fp8_e4m3", 8, 4, 3, special="nan_only", description="FP8 E4M3 (no inf), forward pass",
                     aliases=("fp8", "e4m3", "float8_e4m3fn"), torch_dtype="float8_e4m3fn"),
        NumberFormat("fp8_e5m2", 8, 5, 2, description="FP8 E5M2 (IEEE-like), gradients",
                     aliases=("e5m2", "float8_e5m2"), torch_dtype="float8_e5m2"),
        NumberFormat("fp4_e2m1", 4, 2, 1, special="none", description="FP4 E2M1 (no inf, no NaN), "
                     "OCP microscaling element", aliases=("fp4", "e2m1")),
        NumberFormat("int8", 8, 0, 7, special="none", integer=True, description="8-bit integer, needs a scale",
                     torch_dtype="int8"),
        NumberFormat("int4", 4, 0, 3, special="none", integer=True, description="4-bit integer, needs a scale"),
    )
}
_BY_NAME: dict[str, str] = {alias: f.name for f in FORMATS.values() for alias in (f.name, *f.aliases)}


def get_format(name: str, what: str = "number format") -> NumberFormat:
    """The format called ``name``, or one of its aliases, in any case ("bf16", "BF16", "bfloat16").

    Raises ValueError naming the value (as ``what``, e.g. "precision"), the formats and the closest names.
    """
    key = name.strip().lower() if isinstance(name, str) else name
    if isinstance(key, str) and key in _BY_NAME:
        return FORMATS[_BY_NAME[key]]
    hint = close_matches(str(name), _BY_NAME)
    did_you_mean = f"; did you mean {', '.join(repr(h) for h in hint)}?" if hint else ""
    raise ValueError(f"unknown {what} {name!r}; allowed: {', '.join(FORMATS)} (or an alias: "
                     f"{', '.join(a for f in FORMATS.values() for a in f.aliases)}){did_you_mean}")


def bytes_per_element(precision: str) -> float:
    """Bytes one element occupies in memory (fp32 4, tf32 4, bf16 2, fp8 1, int4 0.5, ...)."""
    return get_format(precision, "dtype").bytes


def format_table() -> list[dict[str, float | str]]:
    """One row per format: bits, exponent/mantissa bits, max, min normal, epsilon, decimal digits."""
    return [
        {
            "format": f.name, "bits": f.bits, "exponent_bits": f.exponent_bits,
            "mantissa_bits": f.mantissa_bits, "max": f.max_value, "min_normal": f.min_normal,
            "min_subnormal": f.min_subnormal, "epsilon": f.epsilon, "decimal_digits": f.decimal_digits,
            "description": f.description,
        }
        for f in FORMATS.values()
    ]


# The precisions weights (and a KV cache) can be stored in, as the memory estimator, the serving model and the
# planner offer them; the planner trains in the first four only (TRAINING_PRECISIONS).
Precision = Literal["fp32", "tf32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "int8", "int4"]
WEIGHT_PRECISIONS: tuple[str, ...] = get_args(Precision)
TRAINING_PRECISIONS: tuple[str, ...] = ("fp32", "tf32", "bf16", "fp16")


def resolve_precision(name: object, allowed: tuple[str, ...] = WEIGHT_PRECISIONS, what: str = "precision") -> str:
    """The registry's name of the precision ``name`` (any alias, any case: "BF16", "bfloat16", "fp8"), which must
    be one of ``allowed``; every config resolves its precision names here at construction.

    ValueError names the value and the allowed names (with the aliases the registry accepts for them).
    """
    if not isinstance(name, str):
        raise TypeError(f"{what} must be a name such as 'bf16', got {type(name).__name__} {name!r}")
    try:
        canonical = get_format(name, what).name
    except ValueError:
        canonical = None
    if canonical in allowed:
        return canonical
    aliases = [a for n in allowed for a in FORMATS[n].aliases]
    if canonical is not None:
        raise ValueError(f"{what} {shown_path(repr(name), 60)} is not offered here; allowed: {', '.join(allowed)}")
    hint = close_matches(name, [*allowed, *aliases])
    did_you_mean = f"; did you mean {', '.join(repr(h) for h in hint)}?" if hint else ""
    raise ValueError(f"unknown {what} {shown_path(repr(name), 60)}; allowed: {', '.join(allowed)}"
                     + (f" (or an alias: {', '.join(aliases)})" if aliases else "") + did_you_mean)


def activation_bytes_per_value(precision: str) -> int:
    """Bytes per activation (and default KV-cache) value when weights are stored in ``precision``: 32-bit in
    fp32/tf32 runs, 16-bit otherwise (8- and 4-bit formats quantize weights; the arithmetic stays 16-bit)."""
    return 4 if get_format(precision, "precision").bytes == 4 else 2
