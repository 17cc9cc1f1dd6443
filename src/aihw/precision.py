"""Number formats used in deep learning: range, precision and size, computed from their bit layout.

Floating-point formats are described by exponent bits, mantissa bits and how the all-ones exponent is used:
IEEE-style formats (fp32, tf32, bf16, fp16, fp8 e5m2) reserve it for inf/NaN; fp8 e4m3 as defined by
Micikevicius et al. 2022 ("FP8 Formats for Deep Learning", arXiv:2209.05433) keeps it for numbers and only
the all-ones mantissa there is NaN, which is why its maximum is 448 rather than 240.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aihw._validate import require_choice


@dataclass(frozen=True)
class NumberFormat:
    """One number format. For integers, exponent_bits = 0 and the range is the integer range."""

    name: str
    bits: int
    exponent_bits: int
    mantissa_bits: int
    ieee_special: bool = True  # all-ones exponent reserved for inf/NaN
    integer: bool = False
    description: str = ""
    finite_only: bool = False  # no inf and no NaN: every code is a number (FP4 E2M1)
    unsigned: bool = False  # no sign bit, no zero: a power of two (the E8M0 block scale)
    block_size: int = 0  # block-scaled formats (MX, NVFP4): values sharing one scale
    scale_bits: int = 0  # bits of that shared scale

    @property
    def bytes(self) -> float:
        """Storage per value in bytes (0.5 for 4-bit formats; block formats add their share of the scale)."""
        return (self.bits + (self.scale_bits / self.block_size if self.block_size else 0)) / 8

    @property
    def bias(self) -> int:
        return 2 ** (self.exponent_bits - 1) - 1 if self.exponent_bits else 0

    @property
    def max_value(self) -> float:
        """Largest finite value."""
        if self.integer:
            return float(2 ** (self.bits - 1) - 1)
        m = self.mantissa_bits
        if self.finite_only:
            return (2 - 2.0**-m) * 2.0 ** ((2**self.exponent_bits - 1) - self.bias)
        if self.ieee_special:
            max_exp = (2**self.exponent_bits - 2) - self.bias
            return (2 - 2.0**-m) * 2.0**max_exp
        # e4m3: all-ones exponent is a normal binade; only mantissa all-ones there is NaN.
        max_exp = (2**self.exponent_bits - 1) - self.bias
        return (2 - 2.0 ** -(m - 1)) * 2.0**max_exp

    @property
    def min_normal(self) -> float:
        """Smallest positive normal value (1 for integers)."""
        if self.unsigned:
            return 2.0**-self.bias
        return 1.0 if self.integer else 2.0 ** (1 - self.bias)

    @property
    def min_subnormal(self) -> float:
        """Smallest positive value."""
        if self.unsigned:
            return 2.0**-self.bias
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


FORMATS: dict[str, NumberFormat] = {
    f.name: f
    for f in (
        NumberFormat("fp32", 32, 8, 23, description="IEEE 754 single precision"),
        NumberFormat("tf32", 19, 8, 10, description="NVIDIA TensorFloat-32: fp32 range, fp16 precision; "
                     "a tensor-core input mode, stored as 32 bits"),
        NumberFormat("bf16", 16, 8, 7, description="bfloat16: fp32 range, 8 bits of precision"),
        NumberFormat("fp16", 16, 5, 10, description="IEEE 754 half precision"),
        NumberFormat("fp8_e4m3", 8, 4, 3, ieee_special=False, description="FP8 E4M3 (no inf), forward pass"),
        NumberFormat("fp8_e5m2", 8, 5, 2, description="FP8 E5M2 (IEEE-like), gradients"),
        NumberFormat("int8", 8, 0, 7, integer=True, description="8-bit integer, needs a scale"),
        NumberFormat("int4", 4, 0, 3, integer=True, description="4-bit integer, needs a scale"),
        NumberFormat("e2m1", 4, 2, 1, ieee_special=False, finite_only=True,
                     description="FP4 E2M1 (no inf, no NaN): the element of MXFP4 and NVFP4"),
        NumberFormat("e8m0", 8, 8, 0, unsigned=True,
                     description="E8M0: an unsigned power of two, the MX block scale (0xFF = NaN)"),
        NumberFormat("mxfp8", 8, 4, 3, ieee_special=False, block_size=32, scale_bits=8,
                     description="OCP MXFP8: 32 fp8 E4M3 values share one E8M0 scale"),
        NumberFormat("mxfp4", 4, 2, 1, ieee_special=False, finite_only=True, block_size=32, scale_bits=8,
                     description="OCP MXFP4: 32 E2M1 values share one E8M0 scale"),
        NumberFormat("nvfp4", 4, 2, 1, ieee_special=False, finite_only=True, block_size=16, scale_bits=8,
                     description="NVIDIA NVFP4: 16 E2M1 values share one E4M3 scale, plus an fp32 scale per tensor"),
    )
}

# Storage bytes per element for the precision names used by the hardware catalogue and roofline.
# tf32 values live in fp32 registers and memory, so they move 4 bytes.
BYTES_PER_ELEMENT: dict[str, float] = {
    "fp64": 8, "fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "fp4": 0.5, "int4": 0.5,
}


def get_format(name: str) -> NumberFormat:
    """Look up a format by name (see :data:`FORMATS`)."""
    return FORMATS[require_choice("number format", name, FORMATS)]


def bytes_per_element(precision: str) -> float:
    """Bytes one element occupies in memory for a catalogue precision name (fp32, bf16, fp8, ...)."""
    return BYTES_PER_ELEMENT[require_choice("dtype", precision, BYTES_PER_ELEMENT)]


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
