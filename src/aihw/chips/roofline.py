"""The roofline model (Williams, Waterman & Patterson, CACM 2009).

A kernel doing ``F`` floating-point operations while moving ``Q`` bytes between off-chip memory and the chip
has arithmetic intensity ``I = F / Q`` (FLOP/byte). On a chip with peak compute ``P`` (FLOP/s) and memory
bandwidth ``B`` (bytes/s) it can reach at most ``min(P, I * B)`` FLOP/s. The *ridge point* ``P / B`` is the
intensity at which the two limits meet: below it a kernel is memory-bound, above it compute-bound.

The byte counts here are the *minimum* traffic (each operand read once, each result written once), i.e. a
perfectly cached kernel. Real kernels move more, so the estimates are upper bounds on speed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aihw._validate import require_finite_result, require_positive, require_positive_int
from aihw.catalogue.hardware import Chip, get_chip
from aihw.formats.precision import bytes_per_element


@dataclass(frozen=True)
class OpEstimate:
    """Roofline estimate of one operation on one chip. Units: FLOP, bytes, FLOP/byte, FLOP/s, seconds."""

    name: str
    flops: float
    bytes_moved: float
    intensity: float
    peak_flops: float
    bandwidth: float
    attainable_flops: float
    time_s: float
    bound: str  # "compute" or "memory"

    @property
    def ridge_point(self) -> float:
        return ridge_point(self.peak_flops, self.bandwidth)

    @property
    def fraction_of_peak(self) -> float:
        return self.attainable_flops / self.peak_flops


def arithmetic_intensity(flops: float, bytes_moved: float) -> float:
    """FLOP per byte moved off-chip."""
    require_positive("flops", flops)
    require_positive("bytes_moved", bytes_moved)
    return flops / bytes_moved


def ridge_point(peak_flops: float, bandwidth: float) -> float:
    """Intensity (FLOP/byte) where the memory roof meets the compute roof."""
    ridge = require_positive("peak_flops", peak_flops) / require_positive("bandwidth", bandwidth)
    require_finite_result(f"ridge_point(peak_flops={peak_flops!r}, bandwidth={bandwidth!r})", ridge)
    return ridge


def attainable_flops(intensity: float, peak_flops: float, bandwidth: float) -> float:
    """min(peak, intensity * bandwidth), in FLOP/s."""
    require_positive("intensity", intensity)
    return min(require_positive("peak_flops", peak_flops), intensity * require_positive("bandwidth", bandwidth))


def matmul_flops(m: int, n: int, k: int) -> int:
    """FLOPs of C[m,n] = A[m,k] @ B[k,n]: one multiply and one add per (i, j, l), so 2*m*n*k."""
    m, n, k = (require_positive_int(name, v) for name, v in (("m", m), ("n", n), ("k", k)))
    return 2 * m * n * k


def matmul_bytes(m: int, n: int, k: int, dtype: str) -> float:
    """Minimum off-chip traffic of a matmul: read A and B once, write C once."""
    m, n, k = (require_positive_int(name, v) for name, v in (("m", m), ("n", n), ("k", k)))
    moved = (float(m) * k + float(k) * n + float(m) * n) * bytes_per_element(dtype)
    require_finite_result(f"matmul_bytes(m={m}, n={n}, k={k})", moved)
    return moved


def elementwise_bytes(n_elements: int, dtype: str, *, n_inputs: int = 2, n_outputs: int = 1) -> float:
    """Traffic of an elementwise op over ``n_elements``: each input read once, each output written once."""
    n_elements = require_positive_int("n_elements", n_elements)
    n_inputs = require_positive_int("n_inputs", n_inputs)
    n_outputs = require_positive_int("n_outputs", n_outputs)
    return float(n_elements) * (n_inputs + n_outputs) * bytes_per_element(dtype)


def estimate(name: str, flops: float, bytes_moved: float, *, peak_flops: float, bandwidth: float) -> OpEstimate:
    """Roofline time of an operation: max(flops / peak, bytes / bandwidth)."""
    intensity = arithmetic_intensity(flops, bytes_moved)
    reach = attainable_flops(intensity, peak_flops, bandwidth)
    compute_time, memory_time = flops / peak_flops, bytes_moved / bandwidth
    return OpEstimate(
        name=name, flops=flops, bytes_moved=bytes_moved, intensity=intensity, peak_flops=peak_flops,
        bandwidth=bandwidth, attainable_flops=reach, time_s=max(compute_time, memory_time),
        bound="compute" if compute_time >= memory_time else "memory",
    )


def _chip_roofs(chip: str | Chip, dtype: str) -> tuple[float, float]:
    chip = get_chip(chip) if isinstance(chip, str) else chip
    return chip.peak_flops(dtype), chip.bandwidth_bytes_per_s


def estimate_matmul(chip: str | Chip, m: int, n: int, k: int, dtype: str = "bf16") -> OpEstimate:
    """Roofline estimate of an (m×k)·(k×n) matmul on a catalogue chip (name or Chip)."""
    peak, bandwidth = _chip_roofs(chip, dtype)
    return estimate(f"matmul {m}x{k} @ {k}x{n} ({dtype})", matmul_flops(m, n, k), matmul_bytes(m, n, k, dtype),
                    peak_flops=peak, bandwidth=bandwidth)


def estimate_elementwise(chip: str | Chip, n_elements: int, dtype: str = "bf16", *, flops_per_element: float = 1,
                         n_inputs: int = 2, n_outputs: int = 1) -> OpEstimate:
    """Roofline estimate of an elementwise op (e.g. an add: 1 FLOP, 2 inputs, 1 output per element)."""
    flops_per_element = require_positive("flops_per_element", flops_per_element)
    peak, bandwidth = _chip_roofs(chip, dtype)
    moved = elementwise_bytes(n_elements, dtype, n_inputs=n_inputs, n_outputs=n_outputs)
    flops = float(n_elements) * flops_per_element
    return estimate(f"elementwise x{n_elements} ({dtype})", flops, moved, peak_flops=peak, bandwidth=bandwidth)


def square_matmul_intensity(n: int, dtype: str) -> float:
    """Intensity of an n×n×n matmul: 2n³ / (3n² · bytes) = 2n / (3 · bytes)."""
    return arithmetic_intensity(matmul_flops(n, n, n), matmul_bytes(n, n, n, dtype))


def min_square_matmul_for_compute_bound(peak_flops: float, bandwidth: float, dtype: str) -> int:
    """Smallest n for which an n×n×n matmul reaches the ridge point (is compute-bound)."""
    ridge = ridge_point(peak_flops, bandwidth)
    if not math.isfinite(ridge) or ridge > 1e15:  # n would be ~ridge: no matmul of any real size
        raise ValueError(f"peak_flops / bandwidth = {ridge:.3g} FLOP/byte: no square matmul of a sensible size "
                         "reaches it; check the two figures")
    n = int(ridge * 3 * bytes_per_element(dtype) / 2)
    while square_matmul_intensity(max(n, 1), dtype) < ridge:
        n += 1
    return max(n, 1)
