"""Serving a decoder-only transformer: memory, prefill, decode, throughput and cost (standard library only).

The model behind the inference chapter and ``aihw serve``. No numpy (it also runs in the browser under Pyodide).
For a model (preset or model file) on ``tp`` chips of one kind, at a weight precision, a KV-cache precision,
``batch`` concurrent sequences and a ``context`` of tokens per sequence:

* **weights** = parameters x bytes per weight (int4 = 0.5 byte; quantization scales not counted), split over
  ``tp`` chips.
* **KV cache** per token = 2 (K and V) x layers x kv_heads x head_dim x bytes; a sequence holds ``context``
  tokens (``min(context, window)`` with sliding-window attention); ``tp`` splits the KV heads.
* **prefill** (time to first token): every prompt token of every sequence goes through the model in one pass,
  ``batch x prompt x FLOP/token`` (the course's FLOP model, :mod:`aihw.transformer.flops`, causal attention) at the chip's
  dense peak, or the weights once over the memory bandwidth if that is slower (a roofline with two roofs).
* **decode** (time per output token): one step produces one token for each of the ``batch`` sequences. It reads
  every weight once (of an embedding table only the ``batch`` rows it gathers: :func:`streamed_weights_bytes`)
  and the whole KV cache once (bytes / bandwidth) and does ``batch x FLOP/token`` (FLOP / peak);
  the step takes the larger of the two, plus two all-reduces per layer when ``tp`` > 1 (ring, alpha-beta).
  At small batch the bytes win (bandwidth-bound); the **knee** is the batch past which the FLOPs win.
* **throughput** = batch / time per output token; **cost** per million output tokens = price of ``tp`` chips per
  second / throughput.

What is left out, on purpose and said in ``assumptions``: achieved fractions of peak (``efficiency`` scales
both roofs if you pass one), activations and framework memory beyond ``memory_fraction``, pipeline parallelism,
overlap of communication with compute, and the tokens a scheduler would mix (prefill and decode in one step).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, fields
from typing import Any

from aihw._validate import (
    NonFiniteResult,
    require_choice,
    require_finite_result,
    require_in_range,
    require_instance,
    require_positive,
    shown_path,
)
from aihw.catalogue.hardware import Chip, get_chip
from aihw.comm.collectives import LinkModel, all_reduce_time
from aihw.formats.precision import WEIGHT_PRECISIONS, Precision, activation_bytes_per_value, resolve_precision
from aihw.layout.dims import ParallelDims, kv_heads_per_device
from aihw.memory.estimator import PRECISION_BYTES, kv_cache_bytes
from aihw.transformer.flops import forward_flops_per_token
from aihw.transformer.shapes import ModelShape, resolve_model

PRECISIONS: tuple[str, ...] = WEIGHT_PRECISIONS  # the registry's weight precisions (aihw.formats.precision)
# The chip's peak that the matmuls of each weight precision run at. int8/int4 are weight-only quantization
# (W8A16, W4A16): weights are widened to bf16 inside the kernel, so the math runs at the bf16 peak.
COMPUTE_PRECISION: dict[str, str] = {
    "fp32": "fp32", "tf32": "tf32", "bf16": "bf16", "fp16": "fp16", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8",
    "int8": "bf16", "int4": "bf16",
}
# Latency of one small all-reduce inside a scale-up domain (NVLink/NVSwitch, ICI): two steps of ~5 us each, as
# the one-shot/two-shot all-reduces serving engines use for decode-sized messages (an assumption, not a datasheet
# figure); the bandwidth term is the ring's 2 (p-1)/p n / B.
ALL_REDUCE_ALPHA_S = 5e-6
ALL_REDUCE_STEPS = 2
ACTIVATION_BYTES = 2  # bytes per activation value in the all-reduces (bf16)


_chip = functools.lru_cache(maxsize=64)(get_chip)  # the catalogue is immutable: look each name up once


@dataclass(frozen=True)
class ServingConfig:
    """One serving question. ``model``: a preset name, a model file (TOML) or a ModelShape."""

    model: ModelShape | str
    chip: str = "H100 SXM"  # catalogue chip (see ``aihw hardware list``)
    precision: Precision = "bf16"  # weights
    kv_precision: Precision | None = None  # KV cache; None: bf16 (fp32 if the weights are fp32)
    batch: int = 1  # concurrent sequences in each decode step
    context: int = 4096  # tokens per sequence held in the KV cache (prompt + generated so far)
    prompt: int | None = None  # prompt tokens prefilled per sequence; None: the whole context
    tp: int = 1  # tensor-parallel degree: chips that split every layer (must divide the heads and KV heads)
    memory_fraction: float = 0.9  # share of each chip's memory usable for weights + KV (vLLM's default is 0.9)
    efficiency: float = 1.0  # fraction of peak FLOP/s and bandwidth reached (1 = the datasheet's roofs)
    shape: ModelShape = field(init=False, repr=False, compare=False)
    chip_spec: Chip = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", resolve_model(self.model))
        m = self.shape
        object.__setattr__(self, "precision", resolve_precision(self.precision))
        if self.kv_precision is not None:
            object.__setattr__(self, "kv_precision", resolve_precision(self.kv_precision, what="kv precision"))
        for name in ("batch", "context", "tp"):
            require_positive(name, getattr(self, name), integer=True)
        if self.prompt is not None:
            require_positive("prompt", self.prompt, integer=True)
            if self.prompt > self.context:
                raise ValueError(f"prompt={self.prompt} must not exceed context={self.context}")
        window = m.sliding_window
        if self.context > m.max_seq and window is None:
            raise ValueError(f"context={self.context} exceeds the maximum context of {m.name} "
                             f"({m.max_seq} tokens) and the model has no sliding window")
        require_in_range("memory_fraction", self.memory_fraction, 0, 1, low_inclusive=False)
        require_in_range("efficiency", self.efficiency, 0, 1, low_inclusive=False)
        ParallelDims(tp=self.tp).validate_model(m)  # the layout rules memory and the planner apply
        chip = _chip(self.chip)  # unknown chip: ValueError with the closest names
        object.__setattr__(self, "chip_spec", chip)
        compute = COMPUTE_PRECISION[self.precision]
        if compute not in chip.flops:
            raise ValueError(f"{chip.name} has no published dense {compute} peak for precision "
                             f"{self.precision!r}; it has: {', '.join(chip.flops)}")

    def __reduce__(self) -> tuple:  # pickles and copies rebuild from the fields given (the chip entry is not picklable)
        return (ServingConfig, tuple(getattr(self, f.name) for f in fields(self) if f.init))

    @property
    def kv_bytes_per_value(self) -> float:
        if self.kv_precision is not None:
            return PRECISION_BYTES[self.kv_precision]
        return float(activation_bytes_per_value(self.precision))

    @property
    def prompt_tokens(self) -> int:
        return self.context if self.prompt is None else self.prompt

    @property
    def cached_tokens(self) -> int:
        """Tokens each sequence keeps in its KV cache: the context, or the window if the model has one."""
        window = self.shape.sliding_window
        return self.context if window is None else min(self.context, window)


@dataclass(frozen=True)
class ServingEstimate:
    """Everything ``aihw serve --json`` prints. Bytes are totals over the ``tp`` chips unless ``per_device``."""

    model: str
    chip: str
    precision: str
    kv_precision: str
    batch: int
    context: int
    prompt: int
    tp: int
    params: int
    weights_bytes: float
    kv_cache_bytes_per_token: float
    kv_cache_bytes: float
    per_device_bytes: float
    usable_bytes_per_device: float
    fits: bool
    prefill_seconds: float
    prefill_bound: str  # "compute" or "memory"
    decode_seconds_per_token: float
    decode_memory_seconds: float  # bytes / bandwidth
    decode_compute_seconds: float  # FLOP / peak
    decode_comm_seconds: float  # tensor-parallel all-reduces
    decode_bound: str  # "memory" or "compute"
    tokens_per_second: float
    max_cached_tokens: int  # KV tokens (all sequences together) that fit beside the weights
    max_batch: int  # sequences of this context that fit on these chips
    knee_batch: int | None  # smallest batch whose decode step is compute-bound; None: never (KV reads grow as fast)
    knee_batch_weights: int | None  # the same for the weight matmuls alone (no KV reads): the classic ridge
    cost_per_million_tokens: float | None  # USD, from the catalogue's price snapshot; None without a price
    assumptions: tuple[str, ...]

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["assumptions"] = list(self.assumptions)
        return d


def weights_bytes(model: ModelShape, precision: str) -> float:
    """Parameters x bytes per weight."""
    require_instance("model", model, ModelShape)
    require_choice("precision", precision, PRECISION_BYTES)
    return model.param_count() * PRECISION_BYTES[precision]


def streamed_weights_bytes(model: ModelShape, precision: str, batch: int) -> float:
    """Weight bytes one decode step of ``batch`` sequences reads: every weight, except the embedding tables.

    A token's input embedding is a row gathered from the table, not a matmul over it, so a step reads ``batch``
    rows of an untied token table (and of a learned position table), not the whole table. A tied table is
    also the output head, which every step streams in full.
    """
    require_instance("model", model, ModelShape)
    require_choice("precision", precision, PRECISION_BYTES)
    gathered = model.max_seq * model.hidden if model.learned_positions else 0
    rows = 1 if model.learned_positions else 0
    if not model.tied_embeddings:
        gathered += model.vocab * model.hidden
        rows += 1
    return (model.param_count() - gathered + batch * rows * model.hidden) * PRECISION_BYTES[precision]


def kv_bytes_per_token(model: ModelShape, bytes_per_value: float, *, tp: int = 1) -> float:
    """2 (K and V) x layers x kv_heads x head_dim x bytes: the KV cache one token adds to one sequence, on one of
    ``tp`` chips (KV heads split, or replicated once tp exceeds them: :func:`aihw.memory.kv_cache_bytes`)."""
    require_instance("model", model, ModelShape)
    bytes_per_value = require_positive("bytes_per_value", bytes_per_value)
    per_token = kv_cache_bytes(model, tokens=1, batch=1, bytes_per_value=bytes_per_value, tp=tp)
    require_finite_result(f"kv_bytes_per_token(bytes_per_value={bytes_per_value!r})", per_token)
    return per_token


def _decode_parts(cfg: ServingConfig, batch: int) -> tuple[float, float, float]:
    """(memory seconds, compute seconds, communication seconds) of one decode step at ``batch``."""
    m, tp = cfg.shape, cfg.tp
    bandwidth, peak = _roofs(cfg)
    kv = kv_bytes_per_token(m, cfg.kv_bytes_per_value, tp=tp) * cfg.cached_tokens * batch  # on one chip
    memory = (streamed_weights_bytes(m, cfg.precision, batch) / tp + kv) / bandwidth
    # a new token attends to every cached key: the non-causal count at s = cached tokens is exactly that
    flops = batch * forward_flops_per_token(m, cfg.cached_tokens).forward
    compute = flops / tp / peak
    return memory, compute, _tp_comm_seconds(cfg, batch)


def _roofs(cfg: ServingConfig) -> tuple[float, float]:
    """(bandwidth bytes/s, peak FLOP/s) of one chip, scaled by the efficiency."""
    chip = cfg.chip_spec
    return (chip.bandwidth_bytes_per_s * cfg.efficiency,
            chip.flops[COMPUTE_PRECISION[cfg.precision]].value * cfg.efficiency)


def _tp_comm_seconds(cfg: ServingConfig, tokens: int) -> float:
    """Two ring all-reduces per layer (after attention and after the MLP) of tokens x hidden activations."""
    tp = cfg.tp
    if tp == 1 or tokens == 0:
        return 0.0
    chip = cfg.chip_spec
    if chip.interconnect is None:
        raise ValueError(f"{chip.name} has no interconnect figure in the catalogue, so tp={tp} cannot be costed")
    link = LinkModel(ALL_REDUCE_ALPHA_S, chip.interconnect.bandwidth_bytes_per_s(direction="per-direction",
                                                                                  scope="chip"))
    n = tokens * cfg.shape.hidden * ACTIVATION_BYTES
    one = all_reduce_time(n, tp, link=link, latency_steps=ALL_REDUCE_STEPS)
    return 2 * cfg.shape.layers * one


def knee_batch(cfg: ServingConfig, *, include_kv: bool = True) -> int | None:
    """Smallest batch whose decode step is compute-bound, from compute(b) >= memory(b), or None.

    compute(b) = b F / P and memory(b) = (W + b K) / B, so b >= (W / B) / (F / P - K / B): a knee exists only
    when one sequence's FLOPs take longer than reading its KV cache (F / P > K / B). ``include_kv=False`` gives
    the knee of the weight matmuls alone (K = 0 and only the dense FLOPs): the roofline's ridge point in tokens.
    """
    weights_memory, _, _ = _decode_parts(cfg, 0)
    one_memory, one_compute, _ = _decode_parts(cfg, 1)
    if include_kv:
        per_seq_memory, per_seq_compute = one_memory - weights_memory, one_compute
    else:
        peak = _roofs(cfg)[1]
        per_seq_memory = 0.0
        per_seq_compute = forward_flops_per_token(cfg.shape, 1).dense / cfg.tp / peak
    gap = per_seq_compute - per_seq_memory
    if gap <= 0:
        return None
    return max(1, math.ceil(weights_memory / gap - 1e-12))


def estimate(cfg: ServingConfig) -> ServingEstimate:
    """The serving estimate of ``cfg``; NonFiniteResult (a ValueError) when its numbers overflow or underflow."""
    require_instance("cfg", cfg, ServingConfig)
    try:
        result = _estimate(cfg)
    except (ZeroDivisionError, OverflowError):
        raise NonFiniteResult(f"batch={shown_path(repr(cfg.batch), 40)}, context={shown_path(repr(cfg.context), 40)}, "
                              f"efficiency={cfg.efficiency!r}: "
                              "a time or rate of this estimate overflows or underflows; use smaller inputs") from None
    require_finite_result("serving estimate", result.to_dict())
    return result


def _estimate(cfg: ServingConfig) -> ServingEstimate:
    """Memory, prefill, decode, throughput, limits and cost for one :class:`ServingConfig`."""
    m, chip, tp = cfg.shape, cfg.chip_spec, cfg.tp
    w = weights_bytes(m, cfg.precision)
    kv_token = kv_bytes_per_token(m, cfg.kv_bytes_per_value)
    kv = kv_token * cfg.cached_tokens * cfg.batch
    kv_token_device = kv_bytes_per_token(m, cfg.kv_bytes_per_value, tp=tp)  # KV heads split, or one replicated
    per_device = w / tp + kv_token_device * cfg.cached_tokens * cfg.batch
    usable = chip.memory_bytes * cfg.memory_fraction
    bandwidth, peak = _roofs(cfg)

    prompt = cfg.prompt_tokens
    prefill_flops = cfg.batch * prompt * forward_flops_per_token(m, prompt, causal=True).forward
    prefill_compute = prefill_flops / tp / peak
    prefill_memory = (w / tp + kv_token_device * min(prompt, cfg.cached_tokens) * cfg.batch) / bandwidth
    prefill = max(prefill_compute, prefill_memory) + _tp_comm_seconds(cfg, cfg.batch * prompt)

    mem_s, comp_s, comm_s = _decode_parts(cfg, cfg.batch)
    decode = max(mem_s, comp_s) + comm_s
    room = usable - w / tp
    max_tokens = max(0, math.floor(room / kv_token_device)) if room > 0 else 0
    price = chip.price.figure.value if chip.price is not None else None
    cost = None if price is None else price * tp / 3600 / (cfg.batch / decode) * 1e6
    kv_split = (f"KV heads split {tp} ways ({kv_heads_per_device(m.n_kv_heads, tp)} per chip)"
                if m.n_kv_heads >= tp else
                f"each of the {m.n_kv_heads} KV heads replicated on {tp // m.n_kv_heads} chips (one per chip)")
    kv_name = cfg.kv_precision or ("fp32" if cfg.kv_bytes_per_value == 4 else "bf16")
    assumptions = (
        f"Weights: {m.param_count():,} parameters x {PRECISION_BYTES[cfg.precision]:g} bytes ({cfg.precision}); "
        "quantization scales and activations are not counted.",
        f"KV cache: 2 x {m.layers} layers x {m.n_kv_heads} KV heads x {m.head_dim} x {cfg.kv_bytes_per_value:g} "
        f"bytes ({kv_name}) = {kv_token:,.0f} bytes per token; each sequence holds {cfg.cached_tokens} tokens.",
        f"Usable memory per chip: {cfg.memory_fraction:.0%} of {chip.memory.quoted} for weights and KV cache.",
        f"Roofs: {chip.bandwidth_bytes_per_s / 1e12:.3g} TB/s and {COMPUTE_PRECISION[cfg.precision]} peak "
        f"{chip.peak_flops(COMPUTE_PRECISION[cfg.precision]) / 1e12:.4g} TFLOP/s (dense) x efficiency "
        f"{cfg.efficiency:g}.",
        "Prefill: every prompt token of every sequence in one pass, causal attention, max(FLOP / peak, bytes / "
        "bandwidth).",
        "Decode: one token per sequence per step at the full context (the last, slowest step); max(weights + KV "
        "bytes / bandwidth, FLOP / peak); no overlap of memory and compute counted twice.",
        (f"Tensor parallel over {tp} chips: weights split {tp} ways, {kv_split}; 2 ring all-reduces per layer "
         f"({ALL_REDUCE_STEPS} x {ALL_REDUCE_ALPHA_S * 1e6:g} us latency + ring bandwidth term, bf16 activations) added, not overlapped." if tp > 1 else
         "One chip (tp = 1): no communication."),
        (f"Cost: {chip.price.provider} at ${price:g} per chip-hour ({chip.price.figure.read}), "
         "output tokens only, fully loaded." if chip.price is not None else "Cost: no price in the catalogue."),
    )
    return ServingEstimate(
        model=m.name, chip=chip.name, precision=cfg.precision, kv_precision=kv_name, batch=cfg.batch,
        context=cfg.context, prompt=prompt, tp=tp, params=m.param_count(), weights_bytes=w,
        kv_cache_bytes_per_token=kv_token, kv_cache_bytes=kv, per_device_bytes=per_device,
        usable_bytes_per_device=usable, fits=per_device <= usable, prefill_seconds=prefill,
        prefill_bound="compute" if prefill_compute >= prefill_memory else "memory",
        decode_seconds_per_token=decode, decode_memory_seconds=mem_s, decode_compute_seconds=comp_s,
        decode_comm_seconds=comm_s, decode_bound="compute" if comp_s > mem_s else "memory",
        tokens_per_second=cfg.batch / decode, max_cached_tokens=max_tokens,
        max_batch=max_tokens // cfg.cached_tokens, knee_batch=knee_batch(cfg),
        knee_batch_weights=knee_batch(cfg, include_kv=False),
        cost_per_million_tokens=cost, assumptions=assumptions)


def estimate_serving(model: ModelShape | str, **kwargs: Any) -> ServingEstimate:
    """Shortcut: ``estimate_serving("llama-3-8b", chip="H100 SXM", batch=8, context=4096)``."""
    return estimate(ServingConfig(model, **kwargs))


def batch_sweep(cfg: ServingConfig, batches: tuple[int, ...]) -> list[ServingEstimate]:
    """The same question at several batch sizes (the latency/throughput curve)."""
    from dataclasses import replace

    return [estimate(replace(cfg, batch=b)) for b in batches]
