"""Scaling laws and what they cost on real chips (standard library only, so it also runs under Pyodide).

* Training compute of a dense transformer: C ≈ 6·N·D FLOP for N parameters and D tokens (Kaplan et al. 2020,
  §2.1: 2N per token forward, 4N backward). :mod:`aihw.transformer.flops` counts the same from a model's shape, including
  both attention matmuls; 6ND leaves attention out, which is accurate while the width is large compared with
  the context.
* Compute-optimal allocation, three named methods side by side (:data:`METHODS`):

  - ``hoffmann-approach1``: Hoffmann et al. 2022 ("Chinchilla"), approach 1 (fixed model sizes, varying
    tokens). Its projection is their Table 3 (:data:`HOFFMANN_TABLE3`); the fitted exponents in their Table 2
    are printed rounded (a = b = 0.50), so the frontier N_opt = G·C^a is fitted here to the Table 3 rows
    themselves (least squares in log space), which reproduces every row to within a few per cent.
  - ``epoch-approach3``: approach 3 (a parametric loss L(N, D) = E + A/N^α + B/D^β) as refitted by Besiroglu,
    Erdil, Barnett, You 2024 (arXiv:2404.10102, "Chinchilla scaling: a replication attempt") to the data
    they extracted from Hoffmann et al.'s Figure 4: E = 1.82, A = 482.01, B = 2085.43, α = 0.3478,
    β = 0.3658 (the estimates printed by their repository, github.com/epoch-research/analyzing-chinchilla,
    ``data_analysis.ipynb``, read 2026-12-01).
  - ``tokens-per-param-20``: the rule of thumb D = 20·N (Chinchilla itself: 70B parameters, 1.4T tokens).
  - ``hoffmann-approach3-rounded``: Hoffmann et al.'s own approach-3 constants as printed in the paper
    (E = 1.69, A = 406.4, B = 410.7, α = 0.34, β = 0.28, their eq. 10). Besiroglu et al. show these are
    biased (rounded, and an optimizer stopped early); kept only to show the difference.

  For a parametric fit, minimising L under C = 6ND gives N_opt = G·(C/6)^(β/(α+β)), D_opt = (C/6)/N_opt with
  G = (αA / (βB))^(1/(α+β)).
* Time and cost on hardware: C / (chips · dense peak · MFU), where MFU (model FLOP utilisation) is the fraction
  of peak a real run achieves; the user sets it, the module never guesses it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

from aihw._validate import (
    NonFiniteResult,
    require_choice,
    require_finite_result,
    require_in_range,
    require_positive,
)
from aihw.catalogue.hardware import Chip, get_chip

Method = Literal["hoffmann-approach1", "epoch-approach3", "tokens-per-param-20", "hoffmann-approach3-rounded"]
METHODS: tuple[str, ...] = get_args(Method)

METHOD_LABELS: dict[str, str] = {
    "hoffmann-approach1": "Hoffmann et al. 2022, approach 1 (their Table 3)",
    "epoch-approach3": "approach 3 refitted by Besiroglu et al. 2024 (Epoch AI)",
    "tokens-per-param-20": "rule of thumb: 20 tokens per parameter",
    "hoffmann-approach3-rounded": "Hoffmann et al. 2022, approach 3 as printed (biased)",
}

# Hoffmann et al. 2022, Table 3 ("Estimated optimal training FLOPs and training tokens for various model sizes",
# approach 1): (parameters, FLOPs, tokens) exactly as printed (tokens rounded to 3 significant figures).
HOFFMANN_TABLE3: tuple[tuple[float, float, float], ...] = (
    (400e6, 1.92e19, 8.0e9),
    (1e9, 1.21e20, 20.2e9),
    (10e9, 1.23e22, 205.1e9),
    (67e9, 5.76e23, 1.5e12),
    (175e9, 3.85e24, 3.7e12),
    (280e9, 9.90e24, 5.9e12),
    (520e9, 3.43e25, 11.0e12),
    (1e12, 1.27e26, 21.2e12),
    (10e12, 1.30e28, 216.2e12),
)

TOKENS_PER_PARAM_RULE_OF_THUMB = 20


@dataclass(frozen=True)
class ChinchillaFit:
    """Parametric loss fit L(N, D) = E + A/N^alpha + B/D^beta (Hoffmann et al. 2022, eq. 10)."""

    E: float
    A: float
    B: float
    alpha: float
    beta: float

    def loss(self, params: float, tokens: float) -> float:
        """Predicted final pre-training loss (nats/token on their data) for ``params`` and ``tokens``."""
        require_positive("params", params)
        require_positive("tokens", tokens)
        return self.E + self.A / params**self.alpha + self.B / tokens**self.beta

    def compute_optimal(self, flops: float) -> tuple[float, float]:
        """(N_opt, D_opt) minimising the loss for a budget of ``flops`` under C = 6ND."""
        require_positive("flops", flops)
        g = (self.alpha * self.A / (self.beta * self.B)) ** (1 / (self.alpha + self.beta))
        params = g * (flops / 6) ** (self.beta / (self.alpha + self.beta))
        return params, flops / 6 / params

    @property
    def params_exponent(self) -> float:
        """a in N_opt ∝ C^a: β/(α+β)."""
        return self.beta / (self.alpha + self.beta)


# Besiroglu et al. 2024's estimates (repository output: A 482.00572, B 2085.43420, E 1.81686, α 0.34781,
# β 0.36585); printed in their paper as E = 1.82, A = 482.01, B = 2085.43, α = 0.3478, β = 0.3658.
EPOCH_APPROACH3 = ChinchillaFit(E=1.82, A=482.01, B=2085.43, alpha=0.3478, beta=0.3658)
HOFFMANN_APPROACH3_ROUNDED = ChinchillaFit(E=1.69, A=406.4, B=410.7, alpha=0.34, beta=0.28)
CHINCHILLA = HOFFMANN_APPROACH3_ROUNDED  # the name earlier versions used; prefer the named constants


@dataclass(frozen=True)
class PowerLawFrontier:
    """N_opt = coefficient · C^exponent, D_opt = C / (6 N_opt): a compute-optimal frontier as a power law."""

    coefficient: float
    exponent: float

    def compute_optimal(self, flops: float) -> tuple[float, float]:
        require_positive("flops", flops)
        params = self.coefficient * flops**self.exponent
        return params, flops / 6 / params


def fit_frontier(rows: tuple[tuple[float, float, float], ...] = HOFFMANN_TABLE3) -> PowerLawFrontier:
    """Least-squares fit of log N = log G + a·log C to (params, flops, tokens) rows (stdlib only)."""
    xs = [math.log(c) for _, c, _ in rows]
    ys = [math.log(n) for n, _, _ in rows]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)
    return PowerLawFrontier(coefficient=math.exp(my - slope * mx), exponent=slope)


HOFFMANN_APPROACH1 = fit_frontier(HOFFMANN_TABLE3)


@dataclass(frozen=True)
class Allocation:
    """A compute-optimal split of a budget: parameters and tokens (and their ratio)."""

    method: str
    params: float
    tokens: float

    @property
    def tokens_per_param(self) -> float:
        return self.tokens / self.params


def compute_optimal(flops: float, method: Method = "epoch-approach3") -> Allocation:
    """Compute-optimal (parameters, tokens) for ``flops`` under C = 6ND by one of :data:`METHODS`."""
    require_positive("flops", flops)
    require_choice("method", method, METHODS)
    if method == "tokens-per-param-20":
        params = math.sqrt(flops / (6 * TOKENS_PER_PARAM_RULE_OF_THUMB))
        return Allocation(method, params, TOKENS_PER_PARAM_RULE_OF_THUMB * params)
    frontiers: dict[str, ChinchillaFit | PowerLawFrontier] = {
        "hoffmann-approach1": HOFFMANN_APPROACH1, "epoch-approach3": EPOCH_APPROACH3,
        "hoffmann-approach3-rounded": HOFFMANN_APPROACH3_ROUNDED}
    frontier = frontiers[method]
    try:
        params, tokens = frontier.compute_optimal(flops)
    except (ZeroDivisionError, OverflowError):
        params = tokens = math.nan
    if not (math.isfinite(params) and math.isfinite(tokens) and params > 0 and tokens > 0):
        raise NonFiniteResult(f"flops={flops!r}: the {method} fit gives no finite allocation for this budget")
    return Allocation(method, params, tokens)


def compute_optimal_all(flops: float) -> dict[str, Allocation]:
    """Every method's allocation of ``flops``, in :data:`METHODS` order."""
    return {m: compute_optimal(flops, m) for m in METHODS}  # type: ignore[arg-type]


def training_flops(params: float, tokens: float) -> float:
    """6·N·D: forward (2N per token) plus backward (4N per token) FLOP of a dense transformer."""
    flops = 6.0 * float(require_positive("params", params)) * float(require_positive("tokens", tokens))
    require_finite_result(f"training_flops(params={params:.3g}, tokens={tokens:.3g})", flops)
    return flops


@dataclass(frozen=True)
class TrainingRun:
    """Time and cost of ``flops`` of training on ``chips`` chips at ``mfu`` of the dense peak."""

    flops: float
    chip: str
    precision: str
    chips: int
    mfu: float
    seconds: float
    chip_hours: float
    usd: float | None  # None when the catalogue has no price for the chip

    @property
    def days(self) -> float:
        return self.seconds / 86400


def training_run(flops: float, chip: str | Chip, *, chips: int, mfu: float, precision: str = "bf16") -> TrainingRun:
    """Wall-clock time, chip-hours and (list-price) cost of a training run on a catalogue chip."""
    require_positive("flops", flops)
    require_positive("chips", chips, integer=True)
    require_in_range("mfu", mfu, 0, 1, low_inclusive=False)
    chip = get_chip(chip) if isinstance(chip, str) else chip
    rate = chips * chip.peak_flops(precision) * mfu
    seconds = flops / rate if rate > 0 else math.inf
    require_finite_result(f"training_run(flops={flops!r}, chips={chips!r}, mfu={mfu!r}).seconds", seconds)
    chip_hours = seconds * chips / 3600
    usd = chip_hours * chip.price.figure.value if chip.price else None
    return TrainingRun(flops=flops, chip=chip.name, precision=precision, chips=int(chips), mfu=mfu,
                       seconds=seconds, chip_hours=chip_hours, usd=usd)


def decode_seconds_per_token(params: float, *, bytes_per_param: float, bandwidth_bytes_per_s: float,
                             batch: int = 1) -> float:
    """Lower bound on one decoding step: every weight is read once from memory per step (batch shares it).

    Returns seconds per step; each of the ``batch`` sequences gets one token per step.
    """
    params = float(require_positive("params", params))
    bytes_per_param = float(require_positive("bytes_per_param", bytes_per_param))
    bandwidth_bytes_per_s = float(require_positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s))
    require_positive("batch", batch, integer=True)
    return params * bytes_per_param / bandwidth_bytes_per_s
