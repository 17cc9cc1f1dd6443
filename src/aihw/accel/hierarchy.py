"""Read bandwidth versus working-set size on this machine, the cache sizes the OS reports, and plateau detection.

The sweep reads the same buffer of ``W`` bytes ``R`` times in one call (``x.expand(R, n).sum()``: a stride-0 view,
so the working set stays ``W`` while ``R * W`` bytes are read), which keeps per-call dispatch overhead out of
small sizes. Bandwidth = R * W / time, timed with :func:`aihw.runtime.timing.time_op`. ``gbps`` is the *best*
sample (on a shared machine interference only ever slows a sample down, so the fastest is the closest to what
the hardware does); ``median_gbps``, ``low`` and ``high`` keep the spread, which the plots show. On a GPU the same
loop shows L2 and HBM.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from aihw._validate import require_positive
from aihw.runtime.timing import time_op

MAX_WORKING_SET = 1 << 31  # 2 GiB: larger sweeps take too long and may not fit


@dataclass(frozen=True)
class SweepConfig:
    """Working-set sizes (bytes, powers of two from ``min_bytes`` to ``max_bytes``) and the timing budget."""

    min_bytes: int = 16 << 10          # 16 KiB
    max_bytes: int = 256 << 20         # 256 MiB
    points_per_octave: int = 1         # sizes per factor of two
    bytes_per_point: int = 64 << 20    # bytes read per timed call (R * W)
    repeats: int = 5                   # timed samples per size
    threads: int = 1                   # CPU threads (1: one core's caches)
    device: Literal["cpu", "cuda"] = "cpu"

    def __post_init__(self) -> None:
        for name in ("min_bytes", "max_bytes", "points_per_octave", "bytes_per_point", "repeats", "threads"):
            require_positive(name, getattr(self, name), integer=True)
        if self.min_bytes < 4096 or self.max_bytes > MAX_WORKING_SET or self.min_bytes >= self.max_bytes:
            raise ValueError(f"working set must satisfy 4096 <= min_bytes < max_bytes <= {MAX_WORKING_SET} "
                             f"(2 GiB); got min_bytes={self.min_bytes}, max_bytes={self.max_bytes}")
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"device must be 'cpu' or 'cuda', got {self.device!r}")
        if self.device == "cuda" and not torch.cuda.is_available():
            raise ValueError("device='cuda' but no CUDA GPU is available here; use device='cpu'")

    def sizes(self) -> list[int]:
        octaves = math.log2(self.max_bytes / self.min_bytes)
        count = int(round(octaves * self.points_per_octave)) + 1
        raw = np.geomspace(self.min_bytes, self.max_bytes, count)
        return sorted({int(s) // 64 * 64 for s in raw})


def bandwidth_sweep(cfg: SweepConfig = SweepConfig()) -> list[dict]:
    """One row per working-set size: ``bytes``, ``gbps`` (best sample, GB/s), ``median_gbps``, ``low``/``high``."""
    rows = []
    old = torch.get_num_threads()
    torch.set_num_threads(cfg.threads)
    try:
        for size in cfg.sizes():
            n = size // 4
            x = torch.rand(n, device=cfg.device)
            reps = max(1, cfg.bytes_per_point // size)
            view = x.expand(reps, n)
            def read(v: torch.Tensor = view) -> torch.Tensor:
                return v.sum()

            timing = time_op(read, device=cfg.device, repeats=cfg.repeats, min_sample_s=0.005)
            moved = reps * n * 4
            rates = [moved / s / 1e9 for s in timing.samples]
            rows.append({"bytes": n * 4, "gbps": max(rates), "median_gbps": moved / timing.median / 1e9,
                         "low": min(rates), "high": max(rates), "reps": reps})
    finally:
        torch.set_num_threads(old)
    return rows


def os_cache_sizes(cpu: int = 0) -> dict[str, int]:
    """Data and unified cache sizes (bytes) the OS reports for ``cpu`` (Linux sysfs), e.g. {"L1d": 49152, ...}.

    Empty when the OS does not expose them. A VM may report the host's cache sizes, not the guest's share.
    """
    base = f"/sys/devices/system/cpu/cpu{cpu}/cache"
    found: dict[str, int] = {}
    if not os.path.isdir(base):
        return found
    for entry in sorted(os.listdir(base)):
        if not entry.startswith("index"):
            continue
        try:
            with open(os.path.join(base, entry, "level")) as f:
                level = f.read().strip()
            with open(os.path.join(base, entry, "type")) as f:
                kind = f.read().strip()
            with open(os.path.join(base, entry, "size")) as f:
                text = f.read().strip()
        except OSError:
            continue
        if kind == "Instruction":
            continue
        units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
        value = int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)
        found[f"L{level}{'d' if kind == 'Data' else ''}"] = value
    return found


def detect_plateaus(sizes: list[float] | np.ndarray, bandwidth: list[float] | np.ndarray, *,
                    tolerance: float = 0.25) -> list[dict]:
    """Group consecutive points whose bandwidth stays within ``tolerance`` (relative) of the group's first point.

    A group of one point is merged into the neighbouring group closest in bandwidth (noise or a transition
    point, not a level). Returns one dict per plateau: ``start`` and ``end`` (sizes), ``bandwidth`` (median of
    the group) and ``points``. A drop between two plateaus marks a cache level filling up; the first size of a new
    plateau is about the size of the level that overflowed, times a small factor.
    """
    s, b = np.asarray(sizes, float), np.asarray(bandwidth, float)
    if s.shape != b.shape or s.ndim != 1 or len(s) < 2:
        raise ValueError(f"sizes and bandwidth must be 1-D of equal length >= 2, got {s.shape} and {b.shape}")
    if np.any(b <= 0) or np.any(np.diff(s) <= 0):
        raise ValueError("bandwidth must be positive and sizes strictly increasing")
    require_positive("tolerance", tolerance)
    groups, start = [], 0
    for i in range(1, len(s) + 1):
        if i == len(s) or abs(b[i] / np.median(b[start:i]) - 1) > tolerance:
            groups.append([start, i])
            start = i
    # a lone point is noise or a transition, not a level: merge it into the neighbour closest in log bandwidth
    while len(groups) > 1 and any(hi - lo == 1 for lo, hi in groups):
        k = next(j for j, (lo, hi) in enumerate(groups) if hi - lo == 1)
        level = np.log(b[groups[k][0]])
        candidates = [j for j in (k - 1, k + 1) if 0 <= j < len(groups)]
        j = min(candidates, key=lambda j: abs(np.log(np.median(b[groups[j][0]:groups[j][1]])) - level))
        lo, hi = min(groups[j][0], groups[k][0]), max(groups[j][1], groups[k][1])
        groups[min(j, k)] = [lo, hi]
        del groups[max(j, k)]
    merged = [groups[0]]
    for lo, hi in groups[1:]:  # neighbours left at the same level after the merges above become one
        plo, phi = merged[-1]
        if abs(np.median(b[lo:hi]) / np.median(b[plo:phi]) - 1) <= tolerance:
            merged[-1] = [plo, hi]
        else:
            merged.append([lo, hi])
    return [{"start": float(s[lo]), "end": float(s[hi - 1]), "bandwidth": float(np.median(b[lo:hi])),
             "points": hi - lo} for lo, hi in merged]
