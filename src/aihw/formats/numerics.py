"""Number formats at the bit level: encode, decode, neighbours, rounding error, block-scaled formats (numpy only).

Every value is rounded exactly as hardware does (round to nearest, ties to even) by enumerating the format's
codes: an n-bit float format has at most 2^(n-1) non-negative codes, so for formats up to 19 bits (tf32) the
sorted table of their values *is* the format, and rounding is a binary search plus a tie rule. fp32 rounds
through numpy's float32 (also round-to-nearest-even). Tests check every code of fp16, bf16, fp8 e4m3 and
fp8 e5m2 against torch's dtypes, bit for bit.

Out-of-range values follow the format's definition unless told otherwise (``overflow``):

* IEEE-style formats (fp32, tf32, bf16, fp16, fp8 e5m2) have infinities: a value at or beyond
  max + half an ulp rounds to inf (IEEE 754 round-to-nearest).
* fp8 e4m3 ("fn": finite, NaN only) has no infinity. The OCP FP8 spec leaves overflow to the implementation
  (saturate or NaN); torch (and NVIDIA's Transformer Engine) saturate to ±448, so that is the definition here.
* e2m1 (FP4) has neither inf nor NaN: the OCP MX v1.0 spec saturates to ±6.
* int8/int4 saturate to their two's-complement range.

``overflow="saturate"`` clamps any format to ±max; ``overflow="raise"`` raises ValueError naming the values
beyond ±max. Block-scaled formats (MXFP8, MXFP4 from the OCP Microscaling spec v1.0; NVIDIA's NVFP4) are
simulated exactly in :func:`block_quantize`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

from aihw._validate import require_choice, require_positive
from aihw.formats.precision import get_format

Special = Literal["ieee", "fn", "finite", "e8m0", "int"]
SPECIALS: tuple[str, ...] = get_args(Special)
Overflow = Literal["format", "saturate", "raise"]
OVERFLOW_MODES: tuple[str, ...] = get_args(Overflow)
BlockFormatName = Literal["mxfp8", "mxfp8_e5m2", "mxfp4", "nvfp4"]
BLOCK_FORMATS: tuple[str, ...] = get_args(BlockFormatName)


@dataclass(frozen=True)
class ElementFormat:
    """Bit layout and special-value rules of one element format.

    ``special``: "ieee" (all-ones exponent = inf/NaN), "fn" (fp8 e4m3: only S.1111.111 is NaN, no inf),
    "finite" (every code a number: e2m1), "e8m0" (unsigned power of two, 0xFF = NaN, no zero), "int"
    (two's complement integer).
    """

    name: str
    bits: int
    exponent_bits: int
    mantissa_bits: int
    special: Special

    @property
    def bias(self) -> int:
        return 2 ** (self.exponent_bits - 1) - 1 if self.exponent_bits else 0

    @property
    def signed(self) -> bool:
        return self.special != "e8m0"

    @property
    def overflow_rule(self) -> Literal["inf", "saturate"]:
        """What the format's definition does with a value beyond its largest finite value."""
        return "inf" if self.special == "ieee" else "saturate"


ELEMENT_FORMATS: dict[str, ElementFormat] = {
    f.name: f
    for f in (
        ElementFormat("fp32", 32, 8, 23, "ieee"),
        ElementFormat("tf32", 19, 8, 10, "ieee"),
        ElementFormat("bf16", 16, 8, 7, "ieee"),
        ElementFormat("fp16", 16, 5, 10, "ieee"),
        ElementFormat("fp8_e4m3", 8, 4, 3, "fn"),
        ElementFormat("fp8_e5m2", 8, 5, 2, "ieee"),
        ElementFormat("e2m1", 4, 2, 1, "finite"),
        ElementFormat("e8m0", 8, 8, 0, "e8m0"),
        ElementFormat("int8", 8, 0, 0, "int"),
        ElementFormat("int4", 4, 0, 0, "int"),
    )
}
ALIASES: dict[str, str] = {
    "float32": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16", "e4m3": "fp8_e4m3",
    "fp8e4m3": "fp8_e4m3", "float8_e4m3fn": "fp8_e4m3", "e5m2": "fp8_e5m2", "fp8e5m2": "fp8_e5m2",
    "float8_e5m2": "fp8_e5m2", "fp4": "e2m1", "fp4_e2m1": "e2m1", "float8_e8m0fnu": "e8m0",
}


def element_format(name: str | ElementFormat) -> ElementFormat:
    """The element format called ``name`` (aliases such as "bfloat16", "e4m3", "fp4" accepted)."""
    if isinstance(name, ElementFormat):
        return name
    low = str(name).lower()
    key = ALIASES.get(low, low)
    if key in ELEMENT_FORMATS:
        return ELEMENT_FORMATS[key]
    require_choice("number format", name, [*ELEMENT_FORMATS, *ALIASES])  # raises, listing close matches
    raise AssertionError("unreachable")


# --------------------------------------------------------------------------------------------------------------
# Decoding: code -> value


def decode(codes: np.ndarray | int, fmt: str | ElementFormat) -> np.ndarray:
    """Values (float64) of the bit patterns ``codes`` (unsigned integers, ``fmt.bits`` wide)."""
    f = element_format(fmt)
    raw = np.asarray(codes)
    if raw.dtype == object or raw.dtype.kind not in "iub" and not (
            raw.dtype.kind == "f" and np.all(np.isfinite(raw)) and np.all(raw == np.round(raw))
            and np.all(np.abs(raw) < 2.0**62)):
        raise ValueError(f"codes must be integers in [0, 2^{f.bits}) for {f.name}, got "
                         f"{str(raw.ravel()[:4].tolist())[:60]} (dtype {raw.dtype})")
    c = raw.astype(np.int64)
    if np.any((c < 0) | (c >= 2**f.bits)):
        raise ValueError(f"codes must be integers in [0, 2^{f.bits}) for {f.name}")
    if f.special == "int":
        return np.where(c >= 2 ** (f.bits - 1), c - 2**f.bits, c).astype(np.float64)
    if f.special == "e8m0":
        return np.where(c == 255, np.nan, np.ldexp(1.0, (c - 127).astype(np.int32)))
    m_bits, e_bits = f.mantissa_bits, f.exponent_bits
    sign = np.where(c >> (f.bits - 1) & 1, -1.0, 1.0)
    e = (c >> m_bits) & (2**e_bits - 1)
    m = c & (2**m_bits - 1)
    frac = m / 2.0**m_bits
    val = np.where(e == 0, np.ldexp(frac, 1 - f.bias), np.ldexp(1.0 + frac, (e - f.bias).astype(np.int32)))
    e_max = 2**e_bits - 1
    if f.special == "ieee":
        val = np.where(e == e_max, np.where(m == 0, np.inf, np.nan), val)
    elif f.special == "fn":
        val = np.where((e == e_max) & (m == 2**m_bits - 1), np.nan, val)
    return sign * val


@functools.lru_cache(maxsize=16)
def _positive_table(name: str) -> np.ndarray:
    """Finite non-negative values of a float format in code order (codes 0, 1, 2, ...): increasing."""
    f = ELEMENT_FORMATS[name]
    n = 2 ** (f.bits - 1) if f.signed else 2**f.bits
    vals = decode(np.arange(n), f)
    finite = np.isfinite(vals)
    count = int(np.argmin(finite)) if not finite.all() else n  # finite codes form a prefix
    return vals[:count]


def representable_values(fmt: str | ElementFormat) -> np.ndarray:
    """Every finite value of ``fmt``, sorted (both zeros collapse to one 0)."""
    f = element_format(fmt)
    if f.special == "int":
        return np.arange(-(2 ** (f.bits - 1)), 2 ** (f.bits - 1), dtype=np.float64)
    if f.bits > 19:
        raise ValueError(f"{f.name} has {2**f.bits:.3g} codes: too many to list; ask for a format of <= 19 bits")
    pos = _positive_table(f.name)
    return pos if not f.signed else np.unique(np.concatenate([-pos, pos])) + 0.0  # + 0.0: -0 becomes 0


def max_value(fmt: str | ElementFormat) -> float:
    """Largest finite value of ``fmt``."""
    f = element_format(fmt)
    if f.special == "int":
        return float(2 ** (f.bits - 1) - 1)
    if f.name == "fp32":
        return float(np.finfo(np.float32).max)
    return float(_positive_table(f.name)[-1])


def min_subnormal(fmt: str | ElementFormat) -> float:
    """Smallest positive value of ``fmt``."""
    f = element_format(fmt)
    if f.special == "int":
        return 1.0
    if f.special == "e8m0":
        return 2.0**-127
    return math.ldexp(1.0, 1 - f.bias - f.mantissa_bits)


def min_normal(fmt: str | ElementFormat) -> float:
    """Smallest positive normal value of ``fmt`` (1 for integers)."""
    f = element_format(fmt)
    if f.special == "int":
        return 1.0
    if f.special == "e8m0":
        return 2.0**-127
    return math.ldexp(1.0, 1 - f.bias)


# --------------------------------------------------------------------------------------------------------------
# Encoding: value -> code (round to nearest, ties to even)


def _overflow_check(a: np.ndarray, f: ElementFormat, overflow: str) -> None:
    require_choice("overflow mode", overflow, OVERFLOW_MODES)
    if overflow == "raise":
        top = max_value(f)
        bad = np.isfinite(a) & (np.abs(a) > top) | np.isinf(a)
        if f.special == "int":
            bad = bad | (a < -(2 ** (f.bits - 1)))
        if np.any(bad):
            sample = ", ".join(f"{v:.6g}" for v in a[bad].ravel()[:3])
            raise ValueError(f"{int(bad.sum())} value(s) outside {f.name}'s range ±{top:.6g} (e.g. {sample}); "
                             f"{f.name} by definition {'rounds them to inf' if f.overflow_rule == 'inf' else 'saturates'}"
                             "; pass overflow='format' or 'saturate' to accept that")


def encode(values: np.ndarray | float, fmt: str | ElementFormat, overflow: Overflow = "format") -> np.ndarray:
    """Bit patterns (int64 array, ``fmt.bits`` wide) of ``values`` rounded to nearest-even in ``fmt``.

    ``overflow``: "format" (the format's definition: inf for IEEE-style formats, saturation for e4m3, e2m1 and
    integers), "saturate" (clamp to ±max) or "raise" (ValueError naming the out-of-range values).
    NaN encodes to a NaN code where the format has one (e2m1 and integers have none: ValueError).
    """
    f = element_format(fmt)
    try:
        a = np.asarray(values, dtype=np.float64)
    except (OverflowError, TypeError, ValueError):
        raise ValueError(f"values must be real numbers (or an array of them) a float64 holds, got "
                         f"{repr(values)[:40]}") from None
    _overflow_check(a, f, overflow)
    nan = np.isnan(a)
    if nan.any() and f.special in ("finite", "int"):
        raise ValueError(f"{f.name} has no NaN: cannot encode NaN")
    if f.special == "int":
        lo, hi = -(2 ** (f.bits - 1)), 2 ** (f.bits - 1) - 1
        q = np.clip(np.rint(np.where(np.isfinite(a), a, np.sign(a) * hi)), lo, hi).astype(np.int64)
        return np.where(q < 0, q + 2**f.bits, q)
    if f.special == "e8m0":
        return _encode_e8m0(a)
    if f.name == "fp32":
        if overflow == "saturate":
            big = float(np.finfo(np.float32).max)
            a = np.where(nan, a, np.clip(a, -big, big))
        with np.errstate(over="ignore"):
            return a.astype(np.float32).view(np.uint32).astype(np.int64)
    table = _positive_table(f.name)
    mag = np.abs(np.where(nan, 0.0, a))
    hi = np.searchsorted(table, mag, side="left")  # table[hi-1] < mag <= table[hi]
    hi_c = np.minimum(hi, len(table) - 1)
    lo_c = np.maximum(hi - 1, 0)
    d_lo, d_hi = mag - table[lo_c], table[hi_c] - mag
    exact = table[hi_c] == mag
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (hi_c % 2 == 0))
    code = np.where(exact, hi_c, np.where(pick_hi, hi_c, lo_c))
    # beyond the largest finite value: round to nearest against the next (infinite) step
    top = table[-1]
    step = top - table[-2]  # ulp in the top binade
    beyond = mag > top
    if f.overflow_rule == "inf" and overflow == "format":
        # the code after max is inf; the midpoint max + step/2 is a tie, and max's code is odd: round up
        to_inf = mag >= top + step / 2
        code = np.where(beyond, np.where(to_inf, len(table), len(table) - 1), code)
    else:
        code = np.where(beyond, len(table) - 1, code)
    code = code.astype(np.int64)
    if f.special == "ieee":
        nan_code = (2**f.exponent_bits - 1) << f.mantissa_bits | 1 << (f.mantissa_bits - 1)
    else:  # fn: S.1111.111
        nan_code = 2 ** (f.bits - 1) - 1
    code = np.where(nan, nan_code, code)
    signbit = np.signbit(a) & ~nan
    return np.where(signbit, code | 1 << (f.bits - 1), code)


def _encode_e8m0(a: np.ndarray) -> np.ndarray:
    """E8M0 holds powers of two only: round log2 down, as the MX spec derives a scale (NaN for <= 0 or NaN)."""
    bad = ~(a > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.floor(np.log2(np.where(bad, 1.0, a)))
    code = np.clip(e + 127, 0, 254).astype(np.int64)
    return np.where(bad | np.isinf(a), 255, code)


def round_to(values: np.ndarray | float, fmt: str | ElementFormat, overflow: Overflow = "format") -> np.ndarray:
    """``values`` rounded to ``fmt`` and decoded back (float64): what storing them in ``fmt`` keeps."""
    return decode(encode(values, fmt, overflow), fmt)


def stochastic_round(values: np.ndarray, fmt: str | ElementFormat, rng: np.random.Generator) -> np.ndarray:
    """Round each value to one of its two neighbours in ``fmt`` with probability by distance (unbiased)."""
    f = element_format(fmt)
    a = np.asarray(values, dtype=np.float64)
    down, up = _floor_ceil(a, f)
    gap = up - down
    p_up = np.where(gap > 0, (a - down) / np.where(gap > 0, gap, 1.0), 0.0)
    return np.where(rng.random(a.shape) < p_up, up, down)


def _floor_ceil(a: np.ndarray, f: ElementFormat) -> tuple[np.ndarray, np.ndarray]:
    vals = representable_values(f)
    idx = np.clip(np.searchsorted(vals, a, side="right"), 1, len(vals) - 1)
    down = np.where(a >= vals[idx - 1], vals[idx - 1], vals[0])
    up = np.where(a == down, down, vals[idx])
    return down, np.maximum(up, down)


# --------------------------------------------------------------------------------------------------------------
# One value, explained


@dataclass(frozen=True)
class Encoding:
    """One value stored in one format: its bits, what they mean, and what was lost."""

    format: str
    value: float  # the input
    code: int
    bits: str  # all bits, most significant first
    sign: str
    exponent: str
    mantissa: str
    stored: float  # the value the bits hold
    kind: str  # "zero", "subnormal", "normal", "inf", "nan", "integer", "saturated", "overflow to inf"
    below: float  # the representable neighbours around the input (equal to stored when exact)
    above: float
    ulp: float  # gap between the two neighbours of the stored value's binade
    abs_error: float
    rel_error: float

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def explain(value: float, fmt: str | ElementFormat, overflow: Overflow = "format") -> Encoding:
    """Encode one value and describe it: sign/exponent/mantissa, kind, neighbours, ulp and rounding error."""
    f = element_format(fmt)
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise ValueError(f"value must be a number, got {value!r}")
    x = float(value)
    code = int(encode(x, f, overflow))
    stored = float(decode(code, f))
    bits = format(code, f"0{f.bits}b")
    if f.special == "int":
        sign, exponent, mantissa = bits[0], "", bits[1:]
    elif f.special == "e8m0":
        sign, exponent, mantissa = "", bits, ""
    else:
        sign, exponent, mantissa = bits[0], bits[1:1 + f.exponent_bits], bits[1 + f.exponent_bits:]
    kind = _kind(x, stored, f)
    below, above = _neighbours(x, f)
    ulp = _ulp(stored, f)
    err = stored - x if math.isfinite(stored) and math.isfinite(x) else math.nan
    rel = abs(err) / abs(x) if x != 0 and math.isfinite(err) else (0.0 if err == 0 else math.nan)
    return Encoding(f.name, x, code, bits, sign, exponent, mantissa, stored, kind, below, above, ulp, err, rel)


def _kind(x: float, stored: float, f: ElementFormat) -> str:
    if math.isnan(stored):
        return "nan"
    if math.isinf(stored):
        return "inf" if math.isinf(x) else "overflow to inf"
    top = max_value(f) if f.name != "fp32" else float(np.finfo(np.float32).max)
    if abs(x) > top and abs(stored) == top:
        return "saturated"
    if f.special == "int":
        return "integer"
    if stored == 0:
        return "zero" if x == 0 else "underflow to zero"
    if f.special != "e8m0" and abs(stored) < min_normal(f):
        return "subnormal"
    return "normal"


def _neighbours(x: float, f: ElementFormat) -> tuple[float, float]:
    if not math.isfinite(x):
        return (math.nan, math.nan)
    if f.name == "fp32":
        v = np.float32(x)
        lo = float(v) if float(v) <= x else float(np.nextafter(v, np.float32(-np.inf)))
        hi = float(v) if float(v) >= x else float(np.nextafter(v, np.float32(np.inf)))
        return lo, hi
    vals = representable_values(f)
    if x < vals[0]:
        return (-math.inf if f.overflow_rule == "inf" else math.nan, float(vals[0]))
    if x > vals[-1]:
        return (float(vals[-1]), math.inf if f.overflow_rule == "inf" else math.nan)
    i = int(np.searchsorted(vals, x, side="left"))
    if vals[i] == x:
        return float(x), float(x)
    return float(vals[i - 1]), float(vals[i])


def _ulp(stored: float, f: ElementFormat) -> float:
    if not math.isfinite(stored):
        return math.nan
    if f.special == "int":
        return 1.0
    if f.special == "e8m0":
        return stored  # next power of two is 2x
    a = abs(stored)
    if a < min_normal(f):
        return min_subnormal(f)
    return math.ldexp(1.0, math.floor(math.log2(a)) - f.mantissa_bits)


def half_ulp_threshold(w: float, fmt: str | ElementFormat) -> float:
    """Smallest |update| that changes ``w`` when added in ``fmt``: half the gap to its neighbour (ties to even)."""
    f = element_format(fmt)
    return _ulp(float(round_to(w, f)), f) / 2


# --------------------------------------------------------------------------------------------------------------
# Block-scaled formats


@dataclass(frozen=True)
class BlockFormat:
    """A block-scaled format: elements of ``element`` sharing one ``scale`` per ``block`` values."""

    name: str
    element: str
    block: int
    scale: str  # "e8m0" (power of two, OCP MX) or "fp8_e4m3" (NVFP4, with a per-tensor fp32 scale too)
    tensor_scale: bool

    @property
    def bits_per_value(self) -> float:
        """Storage per element including the block scale (the per-tensor fp32 scale is negligible)."""
        return ELEMENT_FORMATS[self.element].bits + ELEMENT_FORMATS[self.scale].bits / self.block


# OCP Microscaling Formats (MX) v1.0, Table 1: MXFP8 (E4M3 or E5M2), MXFP4 (E2M1), 32 per E8M0 scale.
# NVFP4 (NVIDIA): E2M1 elements, one E4M3 scale per 16, one fp32 scale per tensor.
BLOCK_FORMAT_SPECS: dict[str, BlockFormat] = {
    b.name: b
    for b in (
        BlockFormat("mxfp8", "fp8_e4m3", 32, "e8m0", False),
        BlockFormat("mxfp8_e5m2", "fp8_e5m2", 32, "e8m0", False),
        BlockFormat("mxfp4", "e2m1", 32, "e8m0", False),
        BlockFormat("nvfp4", "e2m1", 16, "fp8_e4m3", True),
    )
}


@dataclass(frozen=True)
class BlockQuantized:
    """The result of block quantization: dequantized values plus the scales and element codes behind them."""

    format: str
    values: np.ndarray  # dequantized, the input's shape
    scales: np.ndarray  # one per block (decoded), shape (..., n_blocks)
    codes: np.ndarray  # element codes, the input's shape
    tensor_scale: float  # 1.0 unless the format has one (NVFP4)
    saturated: int  # elements clamped to the element format's max


def emax_elem(fmt: str | ElementFormat) -> int:
    """Exponent of the largest power of two in the element format (OCP MX: 8 for E4M3, 15 for E5M2, 2 for E2M1)."""
    return math.floor(math.log2(max_value(fmt)))


def _blocks(x: np.ndarray, block: int, where: str) -> np.ndarray:
    if x.ndim == 0 or x.shape[-1] % block:
        n = x.shape[-1] if x.ndim else 1
        raise ValueError(f"{where}: block size {block} does not divide the last dimension ({n}) of a tensor "
                         f"of shape {tuple(x.shape)}; pad or reshape it to a multiple of {block}")
    return x.reshape(*x.shape[:-1], x.shape[-1] // block, block)


def block_quantize(x: np.ndarray, fmt: BlockFormatName | str, block: int | None = None) -> BlockQuantized:
    """Quantize ``x`` along its last dimension in a block-scaled format, exactly as specified.

    MX (OCP Microscaling v1.0, Section 6.3): per block, X = 2^(floor(log2(max|V|)) - emax_elem) stored in
    E8M0 (clamped to 2^-127; beyond 2^127 the scale is NaN), elements P = round(V / X) to the element format,
    saturating at its max. NVFP4: per-tensor scale s_t = amax / (448 * 6) in fp32, block scale
    s_b = round_e4m3(max|V_block| / 6 / s_t), elements round_e2m1(V / (s_b * s_t)), saturating.
    """
    name = require_choice("block format", fmt, BLOCK_FORMATS)
    spec = BLOCK_FORMAT_SPECS[name]
    size = spec.block if block is None else int(require_positive("block", block, integer=True))
    a = np.asarray(x, dtype=np.float64)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: the input holds inf or NaN; block scales would be NaN")
    b = _blocks(a, size, name)
    amax = np.abs(b).max(axis=-1, keepdims=True)
    elem = ELEMENT_FORMATS[spec.element]
    top = max_value(elem)
    tensor_scale = 1.0
    if spec.scale == "e8m0":
        with np.errstate(divide="ignore"):
            e = np.floor(np.log2(np.where(amax > 0, amax, 2.0**-127))) - emax_elem(elem)
        if np.any(e > 127):
            raise ValueError(f"{name}: a block's scale 2^{int(e.max())} exceeds E8M0's 2^127 (the spec makes it NaN)")
        scales = np.ldexp(1.0, np.clip(e, -127, 127).astype(np.int32))
    else:
        t_amax = float(np.abs(a).max())
        tensor_scale = float(np.float32(t_amax / (max_value(spec.scale) * top))) if t_amax > 0 else 1.0
        scales = round_to(amax / top / tensor_scale, spec.scale, "saturate") * tensor_scale
    safe = np.where(scales > 0, scales, 1.0)
    scaled = b / safe
    saturated = int(np.sum(np.abs(scaled) > top))
    codes = encode(scaled, elem, "saturate")
    deq = decode(codes, elem) * scales
    deq = np.where(scales > 0, deq, 0.0)
    return BlockQuantized(name, deq.reshape(a.shape), scales[..., 0], codes.reshape(a.shape),
                          tensor_scale, saturated)


def per_tensor_quantize(x: np.ndarray, fmt: str | ElementFormat) -> np.ndarray:
    """One scale for the whole tensor: amax maps to ``fmt``'s max (fp8 training recipes, int8 absmax)."""
    f = element_format(fmt)
    a = np.asarray(x, dtype=np.float64)
    amax = float(np.abs(a).max()) if a.size else 0.0
    if amax == 0:
        return np.zeros_like(a)
    scale = amax / max_value(f)
    return round_to(a / scale, f, "saturate") * scale


def quantization_error(x: np.ndarray, q: np.ndarray) -> dict[str, float]:
    """Relative RMS error, max abs error and signal-to-quantization-noise ratio (dB) of ``q`` against ``x``."""
    a, b = np.asarray(x, dtype=np.float64), np.asarray(q, dtype=np.float64)
    noise = float(np.mean((a - b) ** 2))
    signal = float(np.mean(a**2))
    return {"rel_rms": math.sqrt(noise / signal) if signal else 0.0,
            "max_abs": float(np.max(np.abs(a - b))) if a.size else 0.0,
            "sqnr_db": 10 * math.log10(signal / noise) if noise > 0 else math.inf,
            "zero_fraction": float(np.mean((b == 0) & (a != 0)))}


def compare_block_formats(x: np.ndarray, formats: tuple[str, ...] = ("per_tensor_fp8_e4m3", "mxfp8",
                                                                        "per_tensor_e2m1", "mxfp4", "nvfp4",
                                                                        "per_tensor_int8", "per_tensor_int4")
                          ) -> list[dict[str, object]]:
    """Quantization error of one tensor in each format: block-scaled vs one scale per tensor."""
    rows: list[dict[str, object]] = []
    for name in formats:
        if name.startswith("per_tensor_"):
            elem = name.removeprefix("per_tensor_")
            q = per_tensor_quantize(x, elem)
            bits = float(element_format(elem).bits)
        else:
            q = block_quantize(x, name).values
            bits = BLOCK_FORMAT_SPECS[require_choice("block format", name, BLOCK_FORMATS)].bits_per_value
        rows.append({"format": name, "bits_per_value": bits, **quantization_error(x, q)})
    return rows


def format_summary(fmt: str | ElementFormat) -> dict[str, object]:
    """Range and precision of ``fmt`` computed from its codes (the registry in aihw.formats.precision agrees: tested)."""
    f = element_format(fmt)
    try:
        description = get_format(f.name).description
    except ValueError:  # e8m0: a scale format, not in the registry
        description = ""
    return {"format": f.name, "bits": f.bits, "exponent_bits": f.exponent_bits, "mantissa_bits": f.mantissa_bits,
            "max": max_value(f), "min_normal": min_normal(f), "min_subnormal": min_subnormal(f),
            "epsilon": (2.0**-f.mantissa_bits if f.special not in ("int", "e8m0") else 1.0),
            "overflow": f.overflow_rule, "description": description}
