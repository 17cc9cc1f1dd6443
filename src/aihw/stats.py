"""Small-sample statistics for repeated runs (standard library only): mean and a 95% confidence interval.

A difference between two settings is a finding only when its interval excludes zero. With n runs the interval
is mean ± t(0.975, n−1) · s / √n, Student's t with the sample standard deviation s; for paired runs (same seed,
same initialisation, one setting changed) the interval is that of the per-seed differences, which removes the
seed-to-seed variation both settings share.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# Student's t, two-sided 95% (the 0.975 quantile), for 1..30 degrees of freedom; beyond 30, 1.96 is within 4%.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042)


def t_quantile_975(dof: int) -> float:
    """Two-sided 95% Student-t quantile for ``dof`` degrees of freedom (table; 1.96 beyond 30)."""
    if not isinstance(dof, int) or dof < 1:
        raise ValueError(f"degrees of freedom must be a positive integer, got {dof!r}")
    return _T975[dof - 1] if dof <= len(_T975) else 1.96


@dataclass(frozen=True)
class Interval:
    """Mean of n runs with its 95% confidence interval [low, high]."""

    mean: float
    low: float
    high: float
    n: int

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def excludes_zero(self) -> bool:
        """True when the interval lies entirely above or below zero: a difference outside the noise."""
        return self.low > 0 or self.high < 0

    def __str__(self) -> str:
        return f"{self.mean:.4g} (95% CI {self.low:.4g} to {self.high:.4g}, n = {self.n})"


def mean_ci95(values: Sequence[float]) -> Interval:
    """Mean and 95% t-interval of at least two values."""
    xs = [float(v) for v in values]
    if len(xs) < 2 or not all(math.isfinite(x) for x in xs):
        raise ValueError(f"need at least two finite values for an interval, got {values!r}")
    n = len(xs)
    mean = sum(xs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    half = t_quantile_975(n - 1) * sd / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, n)


def paired_difference_ci95(a: Sequence[float], b: Sequence[float]) -> Interval:
    """Interval of the per-run differences a[i] − b[i] (runs paired by seed)."""
    if len(a) != len(b):
        raise ValueError(f"paired runs need equal lengths, got {len(a)} and {len(b)}")
    return mean_ci95([x - y for x, y in zip(a, b, strict=True)])


def with_intervals(result: dict, baseline: str, difference: str) -> dict:
    """Add intervals to a multi-seed result ``{baseline: [per-seed values], "rows": [{"accuracies": [...]}]}``:
    each row's ``"ci"`` (mean_ci95) and ``difference`` (paired against the baseline's values, seed by seed), and
    the baseline's own ``baseline + "_ci"``. Returns ``result``, changed in place."""
    for row in result["rows"]:
        row["ci"] = mean_ci95(row["accuracies"])
        row[difference] = paired_difference_ci95(row["accuracies"], result[baseline])
    result[f"{baseline}_ci"] = mean_ci95(result[baseline])
    return result

