"""One timing harness for every measurement in the package: warm-up, repeats, median, device sync.

Like nanoGPT's ``bench.py``: run the operation a few times to warm caches and allocators, then time ``repeats``
samples. A sample is several back-to-back calls when one call is shorter than ``min_sample_s`` (so timer
resolution and Python overhead do not dominate), and the device is synchronised before each clock read, so
asynchronous GPU work is counted. The result keeps every sample, so callers can show the spread, not only the
median.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch

from aihw._validate import require_positive

MAX_INNER_CALLS = 10_000  # at most this many calls are folded into one sample


def synchronizer(device: torch.device | str) -> Callable[[], None]:
    """A function that waits for ``device``'s queued work (a no-op on the CPU)."""
    device = torch.device(device)
    if device.type == "cuda" and torch.cuda.is_available():
        return lambda: torch.cuda.synchronize(device)
    if device.type == "mps":
        return torch.mps.synchronize
    return lambda: None


def synced_clock(device: torch.device | str) -> Callable[[], float]:
    """A clock for timing phases inside a loop: each read first waits for ``device``'s queued work.

    Without the wait, a GPU phase (an NCCL all-reduce, a backward pass) reads as the microseconds it took to
    queue it, and its time is charged to whichever later phase happens to wait.
    """
    sync = synchronizer(device)

    def read() -> float:
        sync()
        return time.perf_counter()

    return read


@dataclass(frozen=True)
class Timing:
    """Seconds per call: the median of ``samples`` (each the mean over ``inner`` back-to-back calls)."""

    samples: tuple[float, ...]
    inner: int

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def spread(self) -> tuple[float, float]:
        """(min, max) of the samples: the noise a reader should see beside the median."""
        return min(self.samples), max(self.samples)

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Approximate ``level`` confidence interval of the mean (normal approximation; needs >= 2 samples)."""
        n = len(self.samples)
        if n < 2:
            return self.median, self.median
        mean = statistics.fmean(self.samples)
        z = statistics.NormalDist().inv_cdf(0.5 + level / 2)
        half = z * statistics.stdev(self.samples) / math.sqrt(n)
        return mean - half, mean + half


def time_op(op: Callable[[], object], *, device: torch.device | str = "cpu", warmup: int = 2, repeats: int = 5,
            min_sample_s: float = 2e-3, max_seconds: float | None = None, inner: int | None = None) -> Timing:
    """Time ``op()`` on ``device``: ``warmup`` untimed calls, then ``repeats`` timed samples.

    ``max_seconds`` bounds the whole measurement: when the first call shows it would take longer, ValueError
    says how long it would take. ``inner`` fixes the calls per sample (``inner=1`` times every call on its own;
    collectives need a fixed count so that every rank makes the same calls); None: enough to last
    ``min_sample_s``. Raises ValueError for non-positive counts.
    """
    require_positive("repeats", repeats)
    require_positive("min_sample_s", min_sample_s)
    if inner is not None:
        require_positive("inner", inner, integer=True)
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got {warmup}")
    sync = synchronizer(device)
    start = time.perf_counter()
    op()
    sync()
    single = max(time.perf_counter() - start, 1e-9)  # the first call doubles as a warm-up and a probe
    if max_seconds is not None and single * (warmup + repeats) > max_seconds:
        raise ValueError(f"one call took {single:.3g} s, so about {single * (warmup + repeats):.3g} s would be "
                         f"needed; max_seconds={max_seconds:g}")
    for _ in range(max(warmup - 1, 0)):
        op()
    sync()
    start = time.perf_counter()
    op()
    sync()
    single = max(time.perf_counter() - start, 1e-9)
    if inner is None:
        inner = _inner_calls(single, min_sample_s)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            op()
        sync()
        samples.append((time.perf_counter() - start) / inner)
    return Timing(tuple(samples), inner)


def _inner_calls(single_s: float, min_sample_s: float) -> int:
    """Back-to-back calls that make one sample last at least ``min_sample_s`` (at most MAX_INNER_CALLS)."""
    return max(1, min(MAX_INNER_CALLS, math.ceil(min_sample_s / max(single_s, 1e-9))))


def time_ops(ops: Mapping[str, Callable[[], object]], *, device: torch.device | str = "cpu", warmup: int = 2,
             repeats: int = 5, min_sample_s: float = 2e-3) -> dict[str, Timing]:
    """Time several operations in turn, round after round, so that a slow spell of a shared machine hits them
    all alike (comparisons such as fp32 against int8 stay fair). Same warm-up and samples as :func:`time_op`.
    """
    require_positive("repeats", repeats)
    require_positive("min_sample_s", min_sample_s)
    if not ops:
        raise ValueError("time_ops needs at least one operation")
    sync = synchronizer(device)
    inner = {}
    for name, op in ops.items():
        for _ in range(warmup):
            op()
        sync()
        start = time.perf_counter()
        op()
        sync()
        inner[name] = _inner_calls(time.perf_counter() - start, min_sample_s)
    samples: dict[str, list[float]] = {name: [] for name in ops}
    for _ in range(repeats):
        for name, op in ops.items():
            start = time.perf_counter()
            for _ in range(inner[name]):
                op()
            sync()
            samples[name].append((time.perf_counter() - start) / inner[name])
    return {name: Timing(tuple(samples[name]), inner[name]) for name in ops}
