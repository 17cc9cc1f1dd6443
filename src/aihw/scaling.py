"""Scaling laws and what they cost on real chips (standard library + numpy only).

* Training compute of a dense transformer: C ≈ 6·N·D FLOP for N parameters and D tokens (Kaplan et al. 2020,
  §2.1: 2N per token forward, 4N backward; attention's context-dependent term is left out, which is accurate
  while the model width is large compared with the context length). FLOPs per token of a given shape, with
  both attention matmuls, come from the course's one FLOP model, :mod:`aihw.flops`.
* Compute-optimal allocation: Hoffmann et al. 2022 ("Chinchilla"), approach 3, fitted loss
  L(N, D) = E + A / N^α + B / D^β with E = 1.69, A = 406.4, B = 410.7, α = 0.34, β = 0.28 (their eq. 10).
  Minimising L under C = 6ND gives N_opt = G·(C/6)^(β/(α+β)) and D_opt = (C/6) / N_opt, with
  G = (αA / (βB))^(1/(α+β)).
* Time and cost on hardware: C / (chips · dense peak · MFU), where MFU (model FLOP utilisation) is the fraction
  of peak a real run achieves; the user sets it, the module never guesses it.
"""

from __future__ import annotations

from dataclasses import dataclass

from aihw._validate import require_in_range, require_positive
from aihw.catalogue.hardware import get_chip


@dataclass(frozen=True)
class ChinchillaFit:
    """Parametric loss fit L(N, D) = E + A/N^alpha + B/D^beta (Hoffmann et al. 2022, eq. 10)."""

    E: float = 1.69
    A: float = 406.4
    B: float = 410.7
    alpha: float = 0.34
    beta: float = 0.28

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


CHINCHILLA = ChinchillaFit()
# The rule of thumb from Hoffmann et al. 2022's approaches 1 and 2 (their Table 3): ~20 tokens per parameter.
TOKENS_PER_PARAM_RULE_OF_THUMB = 20


def training_flops(params: float, tokens: float) -> float:
    """6·N·D: forward (2N per token) plus backward (4N per token) FLOP of a dense transformer."""
    return 6 * require_positive("params", params) * require_positive("tokens", tokens)


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


def training_run(flops: float, chip, *, chips: int, mfu: float, precision: str = "bf16") -> TrainingRun:
    """Wall-clock time, chip-hours and (list-price) cost of a training run on a catalogue chip."""
    require_positive("flops", flops)
    require_positive("chips", chips, integer=True)
    require_in_range("mfu", mfu, 0, 1, low_inclusive=False)
    chip = get_chip(chip) if isinstance(chip, str) else chip
    seconds = flops / (chips * chip.peak_flops(precision) * mfu)
    chip_hours = seconds * chips / 3600
    usd = chip_hours * chip.price.figure.value if chip.price else None
    return TrainingRun(flops=flops, chip=chip.name, precision=precision, chips=int(chips), mfu=mfu,
                       seconds=seconds, chip_hours=chip_hours, usd=usd)


def decode_seconds_per_token(params: float, *, bytes_per_param: float, bandwidth_bytes_per_s: float,
                             batch: int = 1) -> float:
    """Lower bound on one decoding step: every weight is read once from memory per step (batch shares it).

    Returns seconds per step; each of the ``batch`` sequences gets one token per step.
    """
    require_positive("params", params)
    require_positive("bytes_per_param", bytes_per_param)
    require_positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    require_positive("batch", batch, integer=True)
    return params * bytes_per_param / bandwidth_bytes_per_s
