"""What the reader wants done: a training objective or a serving objective, validated on creation.

A :class:`TrainingObjective` names the model (a preset, a model file, or only a parameter count, shaped by
:func:`shape_for_params`), how many tokens (given, implied by a FLOP budget, or compute-optimal for the model's
size by a scaling law of :mod:`aihw.scaling`), and what bounds the run: a deadline, a budget, or a fixed number
of chips. A :class:`ServingObjective` names the model, the request rate, the prompt and output lengths and the two
latency targets (time to first token, time per output token). Standard library only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal, get_args

from aihw._validate import (
    require_choice,
    require_in_range,
    require_instance,
    require_positive,
)
from aihw.catalogue.hardware import Chip, get_chip, list_chips
from aihw.memory import OPTIMIZERS
from aihw.scaling import METHODS, Method, compute_optimal, training_flops
from aihw.serving import PRECISIONS, Precision
from aihw.transformer.shapes import ModelShape, resolve_model

# The precisions the planner trains in (aihw.planning.PlanConfig refuses the others).
TrainPrecision = Literal["fp32", "tf32", "bf16", "fp16"]
TRAIN_PRECISIONS: tuple[str, ...] = get_args(TrainPrecision)
Criterion = Literal["time", "cost", "energy"]
CRITERIA: tuple[str, ...] = get_args(Criterion)

MAX_CHIPS = 16384
"""The largest cluster sized (Llama 3 405B trained on 16,384 H100s, the largest published run the planner checks)."""

DEFAULT_BATCH_TOKENS = 4 * 2**20
"""Tokens per optimizer step: Llama 2 trained with a global batch of 4M tokens (Touvron et al. 2023, §2.2)."""

# Aspect ratio hidden / layers of a parameter-count-only model. Kaplan et al. 2020 (arXiv:2001.08361, §3.1,
# Figure 5) find the loss depends very weakly on the shape at a fixed parameter count (aspect ratios from about
# 20 to 200 within a few per cent); Llama 2 7B (4096 / 32) and 13B (5120 / 40) use 128, taken here.
ASPECT_RATIO = 128
HEAD_DIM = 128  # Llama 2's head dimension
SHAPE_VOCAB = 32000  # Llama 2's vocabulary


def shape_for_params(params: float) -> ModelShape:
    """A Llama-2-style dense model (RMSNorm, SwiGLU of width 8h/3, RoPE, multi-head attention, head dimension 128)
    of about ``params`` parameters with hidden / layers = :data:`ASPECT_RATIO`.

    Width and depth are whole: hidden a multiple of 128, the MLP width a multiple of 256; the layer count is the
    one that brings the parameter count closest to ``params``.
    """
    params = float(require_positive("params", params))
    if not 1e6 <= params <= 1e13:
        raise ValueError(f"params={params:.3g}: a shape is made for 1e6 to 1e13 parameters")

    def build(heads: int, layers: int) -> ModelShape:
        hidden = heads * HEAD_DIM
        ffn = max(256, round(8 * hidden / 3 / 256) * 256)
        return ModelShape(f"dense-{params / 1e9:.3g}b", hidden, layers, heads, vocab=SHAPE_VOCAB, max_seq=8192,
                          ffn=ffn, gated_mlp=True, biases=False, norm="rmsnorm", learned_positions=False,
                          tied_embeddings=False, source="aihw.choosing.shape_for_params")

    # 12 h^2 parameters per layer (4 h^2 attention + 8 h^2 SwiGLU) with layers = h / ASPECT_RATIO
    hidden = (params * ASPECT_RATIO / 12) ** (1 / 3)
    heads = max(1, round(hidden / HEAD_DIM))
    one = build(heads, 1)
    per_layer = one.layer_params()
    rest = one.param_count() - per_layer
    layers = max(1, round((params - rest) / per_layer))
    return build(heads, layers)


def _optimal_flops_for(params: float, method: str) -> float:
    """The budget whose compute-optimal model has ``params`` parameters: every method of aihw.scaling is a power
    law N_opt = G C^a, so two of its points give G and a exactly."""
    c0, c1 = 1e20, 1e24
    n0 = compute_optimal(c0, method).params  # type: ignore[arg-type]
    n1 = compute_optimal(c1, method).params  # type: ignore[arg-type]
    a = math.log(n1 / n0) / math.log(c1 / c0)
    return c0 * (params / n0) ** (1 / a)


def _chips(names: tuple[str, ...] | None) -> tuple[Chip, ...]:
    if names is None:
        return tuple(list_chips())
    if isinstance(names, str) or not isinstance(names, tuple) or not names:
        raise ValueError(f"chips must be a non-empty tuple of catalogue names, got {names!r}")
    out: list[Chip] = []
    for name in names:
        chip = get_chip(require_instance("chip name", name, str))  # unknown: ValueError with the closest names
        if chip not in out:
            out.append(chip)
    return tuple(out)


@dataclass(frozen=True)
class TrainingObjective:
    """Train a model: which, on how many tokens, and by when or for how much.

    Exactly one of ``model`` (preset, model file or ModelShape) and ``params`` (a count, shaped by
    :func:`shape_for_params`), unless ``flops`` alone is given: then both the size and the tokens are the
    compute-optimal split of that budget (``method``). Tokens: ``tokens``, or ``flops`` / (6 N), or, with
    neither, the compute-optimal tokens for the model's size. The run is sized by ``chips`` (a fixed count, e.g.
    8 for one node), else by ``deadline_days`` (the fewest chips, a power of two, that meet it), else by
    ``budget_usd`` alone (the fewest chips the model fits on). Sorted by cost or energy, up to two doublings more
    are tried and kept when they take fewer chip-hours (a larger cluster can need less recomputation).
    """

    model: ModelShape | str | None = None
    params: float | None = None
    tokens: float | None = None
    flops: float | None = None
    method: Method = "epoch-approach3"
    deadline_days: float | None = None
    budget_usd: float | None = None
    chips: int | None = None
    seq: int = 4096
    batch_tokens: int = DEFAULT_BATCH_TOKENS
    precision: TrainPrecision = "bf16"
    optimizer: str = "adamw"
    chip_names: tuple[str, ...] | None = None
    criterion: Criterion = "cost"
    shape: ModelShape = field(init=False, repr=False, compare=False)
    train_tokens: float = field(init=False, repr=False, compare=False)
    candidates: tuple[Chip, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._check_fields()
        shape = self._shape()
        if self.seq > shape.max_seq and shape.sliding_window is None:
            raise ValueError(f"seq={self.seq} exceeds the {shape.max_seq}-token context of {shape.name}")
        tokens = self._tokens(float(shape.param_count()))
        if tokens < self.batch_tokens:
            raise ValueError(f"{tokens:.3g} training tokens is less than one step of batch_tokens="
                             f"{self.batch_tokens:,}")
        if tokens > 1e16:
            raise ValueError(f"{tokens:.3g} training tokens: at most 1e16 are sized")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "train_tokens", tokens)
        object.__setattr__(self, "candidates", _chips(self.chip_names))

    def _check_fields(self) -> None:
        """Each field in its range, and the combinations that say what to size."""
        require_choice("method", self.method, METHODS)
        require_choice("criterion", self.criterion, CRITERIA)
        require_choice("optimizer", self.optimizer, OPTIMIZERS)
        require_choice("precision", self.precision, TRAIN_PRECISIONS)
        require_positive("seq", self.seq, integer=True)
        require_positive("batch_tokens", self.batch_tokens, integer=True)
        if self.batch_tokens < self.seq:
            raise ValueError(f"batch_tokens={self.batch_tokens} is less than one sequence of seq={self.seq} tokens")
        for name in ("params", "tokens", "flops", "budget_usd"):
            if getattr(self, name) is not None:
                require_positive(name, getattr(self, name))
        if self.deadline_days is not None:  # from about a second to a century
            require_in_range("deadline_days", self.deadline_days, 1e-5, 36525)
        if self.chips is not None:
            require_positive("chips", self.chips, integer=True)
            if self.chips > MAX_CHIPS:
                raise ValueError(f"chips={self.chips}: at most {MAX_CHIPS:,} are sized")
        self._check_combination()

    def _check_combination(self) -> None:
        if self.model is not None and self.params is not None:
            raise ValueError("give the model or its parameter count (params), not both")
        if self.tokens is not None and self.flops is not None:
            raise ValueError("give the tokens or a FLOP budget (flops), not both: the budget sets the tokens")
        if self.model is None and self.params is None and self.flops is None:
            raise ValueError("give a model, a parameter count (params) or a FLOP budget (flops)")
        if self.chips is None and self.deadline_days is None and self.budget_usd is None:
            raise ValueError("give a deadline (deadline_days), a budget (budget_usd) or a fixed number of chips "
                             "(chips): nothing else says how large the run should be")

    def _shape(self) -> ModelShape:
        """The model: a preset, a shape for the parameter count, or the compute-optimal size for the budget."""
        if self.model is not None:
            return resolve_model(self.model)
        if self.params is not None:
            return shape_for_params(self.params)
        assert self.flops is not None
        return shape_for_params(compute_optimal(self.flops, self.method).params)

    def _tokens(self, n: float) -> float:
        """Training tokens: as given, set by the FLOP budget, or compute-optimal for ``n`` parameters."""
        if self.tokens is not None:
            return float(self.tokens)
        if self.flops is not None:
            return self.flops / training_flops(n, 1)
        return compute_optimal(_optimal_flops_for(n, self.method), self.method).tokens

    @property
    def global_batch(self) -> int:
        """Sequences per optimizer step."""
        return self.batch_tokens // self.seq

    @property
    def deadline_s(self) -> float | None:
        return None if self.deadline_days is None else self.deadline_days * 86400

    def to_dict(self) -> dict:
        return {"kind": "training", "model": self.shape.name, "params": self.shape.param_count(),
                "tokens": self.train_tokens, "tokens_per_param": self.train_tokens / self.shape.param_count(),
                "method": self.method, "deadline_days": self.deadline_days, "budget_usd": self.budget_usd,
                "chips": self.chips, "seq": self.seq, "global_batch": self.global_batch,
                "precision": self.precision, "optimizer": self.optimizer, "criterion": self.criterion}


@dataclass(frozen=True)
class ServingObjective:
    """Serve a model at ``rate`` requests per second, each a ``prompt`` and ``output`` tokens long, within a time
    to first token ``ttft_s`` and a time per output token ``tpot_s`` (seconds)."""

    model: ModelShape | str
    rate: float
    prompt: int = 1024
    output: int = 256
    ttft_s: float = 1.0
    tpot_s: float = 0.05
    precision: Precision = "bf16"
    kv_precision: Precision | None = None
    chip_names: tuple[str, ...] | None = None
    criterion: Criterion = "cost"
    shape: ModelShape = field(init=False, repr=False, compare=False)
    candidates: tuple[Chip, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        require_in_range("rate", self.rate, 1e-6, 1e7)  # requests per second: one a fortnight to ten million
        for name in ("prompt", "output"):
            require_positive(name, getattr(self, name), integer=True)
        require_in_range("ttft_s", self.ttft_s, 0, 3600, low_inclusive=False)
        require_in_range("tpot_s", self.tpot_s, 0, 60, low_inclusive=False)
        require_choice("precision", self.precision, PRECISIONS)
        if self.kv_precision is not None:
            require_choice("kv precision", self.kv_precision, PRECISIONS)
        require_choice("criterion", self.criterion, CRITERIA)
        shape = resolve_model(self.model)
        if self.context > shape.max_seq and shape.sliding_window is None:
            raise ValueError(f"prompt + output = {self.context} tokens exceeds the {shape.max_seq}-token context "
                             f"of {shape.name}")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "candidates", _chips(self.chip_names))

    @property
    def context(self) -> int:
        return self.prompt + self.output

    def to_dict(self) -> dict:
        return {"kind": "serving", "model": self.shape.name, "params": self.shape.param_count(),
                "rate": self.rate, "prompt": self.prompt, "output": self.output, "ttft_s": self.ttft_s,
                "tpot_s": self.tpot_s, "precision": self.precision, "kv_precision": self.kv_precision,
                "criterion": self.criterion}
