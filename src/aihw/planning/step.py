"""Plan a training run: DP x TP x PP x CP x EP x ZeRO x recomputation, with a step model built from GEMM shapes.

For every layout that uses all the chips (:class:`aihw.layout.dims.ParallelDims`), the planner (stdlib only)

1. sizes the busiest device with :mod:`aihw.memory.estimator` (uneven pipeline stages, fused or eager attention,
   sequence parallelism, context and expert parallelism, ZeRO with the gradient precision as an option) and
   marks the layout as fitting when that is at most ``memory_fraction`` of the chip's memory;
2. estimates one optimizer step as a sum of named terms (seconds, see :class:`Layout.breakdown`):

   * ``compute``: every matrix multiply of one micro-batch on one device, each timed from the roofline of
     its shape on the chip (``min(peak x gemm_fraction, arithmetic intensity x HBM bandwidth)``), where
     ``gemm_fraction`` is the best share of peak published matmul benchmarks reach on that chip
     (:data:`GEMM_FRACTION`, sourced); plus the memory-bound element-wise work (norms, activations, residual
     adds, softmax when attention is not fused) at HBM bandwidth; backward = 2 x forward matmuls, plus the
     recomputed forward work; the slowest pipeline stage sets the pace;
   * ``bubble``: the pipeline fill and drain, ``(p - 1) / v`` slowest-stage micro-batch times (1F1B,
     interleaved with ``v`` virtual stages; Narayanan et al. 2021);
   * ``tp_comm``, ``cp_comm``, ``ep_comm``, ``pp_comm``, ``dp_comm``: the communication left exposed
     (alpha-beta, :mod:`aihw.comm.collectives`, at an achieved share of line rate, :data:`BUS_FRACTION`).
     TP: 4 all-reduces (or all-gather + reduce-scatter pairs with sequence parallelism) of ``b s h`` per layer
     and micro-batch, 6 with full recomputation, not overlapped; CP: the ring-attention key/value passes,
     hidden behind the attention compute when shorter; EP: 4 all-to-alls per MoE layer and micro-batch; PP:
     one activation and one gradient per micro-batch and chunk; DP: the gradient reduce-scatter/all-gather,
     overlapped with the last micro-batch's backward pass; ZeRO-3: parameters gathered in every micro-batch's
     forward and backward (once per step with ``zero3_keep_gathered``; a third time for the recomputed forward
     with ``Efficiency.zero3_regather_recompute``, as DeepSpeed does), overlapped with compute, and the gradient
     reduce-scatter overlapped too unless ``Efficiency.zero3_overlap_reduce`` is off.

   Fused attention's backward is 2.5 x its forward (it recomputes the scores); element-wise work is counted for
   fused kernels, or kernel by kernel for eager PyTorch (``PlanConfig.elementwise``).

3. ranks the fitting layouts by step time and says why the winner wins, with an uncertainty band: the same
   step with every efficiency at its pessimistic and optimistic value (:data:`BAND`).

Ranks are ordered TP fastest, then CP, then DP (EP carved from DP x CP), then PP (Megatron-LM's order), so TP and
CP groups stay inside a node when they fit in one.

**Calibration.** One constant is fitted: :data:`STEP_OVERHEAD`, the share of a step lost to everything the
model does not see (kernel launches, optimizer step, data loading, imperfect overlap), fitted once by least
squares to the ten rows of Narayanan et al. 2021, Table 1, and used unchanged everywhere (see
``aihw.planning.published``). All other constants are read from sources.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

from aihw._validate import (
    require_choice,
    require_finite_result,
    require_in_range,
    require_non_negative,
    require_positive,
)
from aihw.formats.precision import activation_bytes_per_value
from aihw.layout.dims import ParallelDims, stage_layers
from aihw.layout.schedules import bubble_fraction
from aihw.memory.estimator import (
    MemoryConfig,
    grad_bytes_split,
    per_device_bytes,
    stage_params,
)
from aihw.planning import traffic
from aihw.planning.config import ATTENTION, Layout, PlanConfig
from aihw.planning.efficiency import (
    ATTENTION_TO_GEMM,
    BAND,
    DEFAULT_GEMM_FRACTION,
    FUSED_ATTENTION_BACKWARD,
    GEMM_FRACTION,
)
from aihw.transformer.flops import Recompute, flops_per_token, model_flops_per_token
from aihw.transformer.shapes import ModelShape

# Element-wise values read + written per token per layer in the forward pass, in units of hidden (fused
# kernels, Megatron-style): 2 norms (in + out: 4), 2 bias-dropout-residual adds (2 in + 1 out each: 6),
# rotary/bias on Q, K (2). The MLP activation adds (2 + 1) x its width per token (GELU: in + out; SwiGLU:
# gate, up in, out). Eager attention adds ~4 passes over the s x s scores per head (scale+mask, softmax,
# dropout: read + write), at 2 bytes.
ELEMENTWISE_H = 12
EAGER_SCORE_PASSES = 4


def eager_elementwise_bytes(model: ModelShape) -> tuple[float, float]:
    """HBM bytes per token per layer (forward, backward) of a Llama block's element-wise work in eager PyTorch.

    Counted kernel by kernel from torchtitan's Llama code (``torchtitan/models/norms.py`` RMSNorm and
    ``torchtitan/models/llama/model.py``, read 2026-12-01; its 64-A100 presets set ``norm_type = "rmsnorm"`` and
    ``compile = false``), bf16 activations, each kernel reading its inputs and writing its output once:

    * RMSNorm ``(x.float() * rsqrt(x.pow(2).mean(-1) + eps)).type_as(x) * w``: upcast 2+4, pow 4+4, mean 4,
      multiply 4+4, downcast 4+2, weight 2+2 = 36 bytes per element forward; autograd's backward through the
      same graph ~64 (two of them per layer; the fused kernel moves 4 and 6);
    * rotary embedding through complex fp32 (upcast, complex multiply, downcast) on Q and K: 20 bytes per
      element each way; ``repeat_kv``'s expand + reshape copies K and V to every query head (GQA only): 2 x 2
      bytes per element of (kv + h) each way; the attention output's ``transpose().contiguous()``: 4 per element
      of h each way;
    * SwiGLU ``silu(w1 x) * w3 x`` in two kernels: 4 + 6 = 10 bytes per element of the MLP width forward, ~16
      backward (a plain GELU: 4 and 6); two residual adds: 6 bytes per element of h each way.

    The fused count the planner uses otherwise is ``ELEMENTWISE_H`` values per element of h plus 3 per element
    of the MLP width forward, twice that backward.
    """
    h, kv, f = model.hidden, model.kv_dim, model.ffn_dim
    rms = model.norm == "rmsnorm"
    norm_f, norm_b = (36, 64) if rms else (4, 8)
    rotary = 0 if model.learned_positions else 20 * (h + kv)
    repeat = 4 * (h + kv) if model.n_kv_heads != model.heads else 0
    mlp_f, mlp_b = (10, 16) if model.gated_mlp else (4, 6)
    fwd = 2 * norm_f * h + rotary + repeat + 4 * h + mlp_f * f + 2 * 6 * h
    bwd = 2 * norm_b * h + rotary + repeat + 4 * h + mlp_b * f + 2 * 6 * h
    return float(fwd), float(bwd)



@dataclass(frozen=True)
class _Chip:
    peak: float
    hbm: float
    gemm: float


@functools.lru_cache(maxsize=4096)
def _chip(cfg: PlanConfig, scale: float = 1.0) -> _Chip:
    chip = cfg.cluster.chip_spec
    frac = cfg.efficiency.gemm_fraction or GEMM_FRACTION.get(chip.key, DEFAULT_GEMM_FRACTION)
    return _Chip(chip.peak_flops(cfg.precision), chip.bandwidth_bytes_per_s, min(1.0, frac * scale))


def attention_backward_factor(attention: str) -> float:
    """Backward attention matmul time over forward: 2 for eager attention (dV, dP, dQ, dK), 2.5 when fused.

    A fused (FlashAttention) kernel keeps no s x s scores, so its backward recomputes S = Q K^T before the four
    gradient matmuls: 5 matmuls of the forward's size against the forward's 2 (Dao et al. 2022, Algorithm 4).
    """
    require_choice("attention", attention, ATTENTION)
    return FUSED_ATTENTION_BACKWARD if attention == "fused" else 2.0


def _check_gemm_arguments(**values: object) -> None:
    for name in ("m", "n", "k"):
        require_non_negative(name, values[name])
    for name in ("peak", "hbm", "bytes_per_value"):
        require_positive(name, values[name])
    require_in_range("fraction", values["fraction"], 0.0, 1.0, low_inclusive=False)


def gemm_seconds(m: float, n: float, k: float, *, peak: float, hbm: float, fraction: float,
                 bytes_per_value: float = 2) -> float:
    """Roofline time of an (m x k) @ (k x n) matmul: max(FLOPs at fraction x peak, bytes at HBM bandwidth)."""
    try:
        ok = m >= 0 and n >= 0 and k >= 0 and peak > 0 and hbm > 0 and 0 < fraction <= 1 and bytes_per_value > 0
    except TypeError:  # a str or None among them
        ok = False
    if not ok:
        _check_gemm_arguments(m=m, n=n, k=k, peak=peak, hbm=hbm, fraction=fraction, bytes_per_value=bytes_per_value)
    try:
        seconds = max(2.0 * m * n * k / (peak * fraction), bytes_per_value * (m * k + k * n + m * n) / hbm)
    except OverflowError:  # an int beyond float range
        seconds = math.inf
    if not seconds < math.inf:
        require_finite_result(f"gemm_seconds(m={m!r}, n={n!r}, k={k!r}, fraction={fraction!r})", seconds)
    return seconds


@functools.lru_cache(maxsize=65536)
def _layer_seconds(cfg: PlanConfig, ch: _Chip, tp: int, cp: int, ep: int, b: int, recompute: str
                   ) -> tuple[float, float, float]:
    """(forward, backward incl. recomputation, attention-core forward) seconds of one layer, one micro-batch."""
    mdl, s = cfg.shape, cfg.tokens
    t = b * s / cp  # tokens on this device
    bpv = activation_bytes_per_value(cfg.precision)
    g = functools.partial(gemm_seconds, peak=ch.peak, hbm=ch.hbm, fraction=ch.gemm, bytes_per_value=bpv)
    h, kv, hd = mdl.hidden, mdl.kv_dim, mdl.head_dim
    dense = g(t, (h + 2 * kv) / tp, h) + g(t, h, h / tp)
    width = (2 if mdl.gated_mlp else 1)
    if mdl.is_moe:
        rows = t * ep * mdl.top_k * mdl.capacity_factor / mdl.experts  # tokens per local expert
        local = mdl.experts / ep
        fe = mdl.expert_ffn_dim
        dense += g(t, mdl.experts, h) + local * (g(rows, width * fe / tp, h) + g(rows, h, fe / tp))
        act_width = mdl.top_k * mdl.capacity_factor * fe
    else:
        dense += g(t, width * mdl.ffn_dim / tp, h) + g(t, h, mdl.ffn_dim / tp)
        act_width = mdl.ffn_dim
    heads = b * mdl.heads / tp  # (micro-batch x heads) attention problems on this device
    q = s / cp
    if cfg.attention == "fused":  # FlashAttention skips the masked half of causal blocks, at its own efficiency
        attn = heads * (g(q, s, hd) + g(q, hd, s)) / 2 / ATTENTION_TO_GEMM
        score_bytes = 0.0
    else:
        attn = heads * (g(q, s, hd) + g(q, hd, s))
        score_bytes = EAGER_SCORE_PASSES * 2 * heads * q * s * bpv
    sp = tp if cfg.sequence_parallel else 1
    if cfg.elementwise == "eager":  # kernel by kernel (eager_elementwise_bytes); split over TP like the weights
        fwd_bytes, bwd_bytes = eager_elementwise_bytes(mdl)
        elementwise = (fwd_bytes * t / tp + score_bytes) / ch.hbm
        elementwise_bwd = (bwd_bytes * t / tp + 2 * score_bytes) / ch.hbm
    else:
        elementwise = (ELEMENTWISE_H * h * t * bpv / sp + 3 * act_width * t * bpv / tp + score_bytes) / ch.hbm
        elementwise_bwd = 2 * elementwise
    forward = dense + attn + elementwise
    backward = 2 * dense + attention_backward_factor(cfg.attention) * attn + elementwise_bwd
    extra = {"none": 0.0, "selective": attn + score_bytes / ch.hbm, "full": forward}[recompute]
    return forward, backward + extra, attn


@functools.lru_cache(maxsize=65536)
def _head_seconds(cfg: PlanConfig, ch: _Chip, tp: int, cp: int, b: int) -> float:
    mdl = cfg.shape
    t = b * cfg.tokens / cp
    fwd = gemm_seconds(t, mdl.vocab / tp, mdl.hidden, peak=ch.peak, hbm=ch.hbm, fraction=ch.gemm)
    softmax = 3 * 4 * t * mdl.vocab / tp / ch.hbm  # fp32 logits: write, read for softmax/loss, write gradient
    return 3 * fwd + softmax


def _step(cfg: PlanConfig, dims: ParallelDims, recompute: str, b: int, m: int, stages: tuple[int, ...],
          *, gemm_scale: float = 1.0, bus: float = 1.0, overlap: bool | None = None,
          mem: MemoryConfig | None = None) -> dict:
    """Seconds per term of one optimizer step (see the module docstring).

    ``mem``: the layout's :func:`memory_config`, when the caller has it already.
    """
    eff = cfg.efficiency
    overlap = eff.overlap if overlap is None else overlap
    ch = _chip(cfg, gemm_scale)
    fwd, fwd_bwd_extra, attn = _layer_seconds(cfg, ch, dims.tp, dims.cp, dims.ep, b, recompute)
    # per device: its chunks' layers; the head sits on the last device, the embedding (a lookup) on the first
    per_device = _device_layers(stages, dims.pp, dims.virtual_stages)
    device_time = [n * (fwd + fwd_bwd_extra) for n in per_device]
    device_time[-1] += _head_seconds(cfg, ch, dims.tp, dims.cp, b)
    compute = m * max(device_time)
    # (p - 1) / v slowest-stage times
    bubble = bubble_fraction(dims.pp, m, v=dims.virtual_stages, convention="of_ideal") * compute
    if mem is None:
        mem = memory_config(cfg, dims, recompute, b, m, stages)
    t = traffic.Traffic(cfg, dims, recompute, b, m, layers=max(per_device), bus=bus)
    terms = {"compute": compute, "bubble": bubble, "tp_comm": t.tp_seconds(),
             "cp_comm": t.cp_seconds(hidden_behind=3 * attn if overlap else 0.0), "ep_comm": t.ep_seconds(),
             "pp_comm": t.pp_seconds(),
             "dp_comm": t.dp_seconds(params=stage_params(mem), grad_bytes=grad_bytes_split(mem)[0],
                                     backward_window=fwd_bwd_extra * max(per_device) if overlap else 0.0,
                                     compute=compute if overlap else 0.0)}
    terms["overhead"] = eff.step_overhead / (1 - eff.step_overhead) * sum(terms.values())
    return terms


@functools.lru_cache(maxsize=4096)
def _device_layers(stages: tuple[int, ...], pp: int, v: int) -> tuple[int, ...]:
    """Layers on each pipeline device: its ``v`` chunks' layers."""
    return tuple(sum(stages[c * pp + d] for c in range(v)) for d in range(pp))


@functools.lru_cache(maxsize=4096)
def _stage_layers(layers: int, pp: int, v: int) -> tuple[int, ...]:
    return stage_layers(layers, pp, virtual_stages=v)


def memory_config(cfg: PlanConfig, dims: ParallelDims, recompute: str, b: int, m: int,
                   stages: tuple[int, ...]) -> MemoryConfig:
    pp, v = dims.pp, dims.virtual_stages
    busiest = max(_device_layers(stages, pp, v))
    return MemoryConfig(model=cfg.shape, precision=cfg.precision, optimizer=cfg.optimizer, batch=b,
                        seq=cfg.tokens, recompute=recompute, zero=dims.zero, dp=dims.dp, tp=dims.tp, pp=pp,
                        cp=dims.cp, ep=dims.ep, virtual_stages=v, micro_batches=m, stage_layers=busiest,
                        attention=cfg.attention, grad_precision=cfg.grad_precision, schedule=cfg.schedule,
                        sequence_parallel=cfg.sequence_parallel, zero3_keep_gathered=cfg.zero3_keep_gathered)


def evaluate(cfg: PlanConfig, dims: ParallelDims, *, recompute: str = "none", micro_batch: int = 1,
             band: bool = True, time_if_too_big: bool = True) -> Layout:
    """One layout's memory and step model (ValueError if the batch does not split into its micro-batches).

    ``band``: also the optimistic/pessimistic step times; ``time_if_too_big``: time a layout that does not fit.
    """
    m, stages = split_layout(cfg, dims, micro_batch)
    mem = memory_config(cfg, dims, recompute, micro_batch, m, stages)
    return evaluate_sized(cfg, dims, recompute, micro_batch, m, stages, mem, band=band, time_if_too_big=time_if_too_big)


def split_layout(cfg: PlanConfig, dims: ParallelDims, b: int) -> tuple[int, tuple[int, ...]]:
    """(micro-batches m, layers per pipeline chunk) of a layout; ValueError if it does not suit the model/batch."""
    dims.validate_model(cfg.shape, seq=cfg.tokens)
    if cfg.global_batch % (dims.dp * b):
        raise ValueError(f"global batch {cfg.global_batch} does not split into dp x micro-batch = "
                         f"{dims.dp} x {b} = {dims.dp * b} (it must be a multiple)")
    m = cfg.global_batch // (dims.dp * b)
    if dims.virtual_stages > 1 and m % dims.pp:
        raise ValueError(f"the interleaved schedule needs the micro-batches m = {m} to be a multiple of "
                         f"pp = {dims.pp}")
    return m, _stage_layers(cfg.shape.layers, dims.pp, dims.virtual_stages)


@functools.lru_cache(maxsize=256)
def _constants(cfg: PlanConfig) -> tuple[float, int, float, float]:
    """(usable bytes per chip, tokens per step, model FLOPs per step, dense peak FLOP/s): the same for every layout."""
    chip = cfg.cluster.chip_spec
    tokens = cfg.global_batch * cfg.tokens
    return (cfg.memory_fraction * chip.memory_bytes, tokens, model_flops_per_token(cfg.shape, cfg.tokens) * tokens,
            chip.peak_flops(cfg.precision))


@functools.lru_cache(maxsize=256)
def _executed_flops(cfg: PlanConfig, recompute: Recompute) -> float:
    return flops_per_token(cfg.shape, cfg.tokens, recompute=recompute) * (cfg.global_batch * cfg.tokens)


def evaluate_sized(cfg: PlanConfig, dims: ParallelDims, recompute: str, b: int, m: int, stages: tuple[int, ...],
              mem: MemoryConfig, *, band: bool, time_if_too_big: bool) -> Layout:
    """:func:`evaluate` once the layout is checked and its (validated) memory configuration built."""
    size = per_device_bytes(mem)
    capacity, tokens, model_flops, peak = _constants(cfg)
    fits = size <= capacity
    if not fits and not time_if_too_big:
        return Layout(dims, recompute, b, m, stages, size, fits)
    terms = _step(cfg, dims, recompute, b, m, stages, mem=mem)
    lo = hi = sum(terms.values())
    if band:
        lo, hi = _band(cfg, dims, recompute, b, m, stages)
    return Layout(dims, recompute, b, m, stages, size, fits, terms, tokens, model_flops,
                  _executed_flops(cfg, recompute), peak, (lo, hi))


def _band(cfg: PlanConfig, dims: ParallelDims, recompute: str, b: int, m: int, stages: tuple[int, ...]
          ) -> tuple[float, float]:
    lo = sum(_step(cfg, dims, recompute, b, m, stages, gemm_scale=BAND["high"]["gemm"], bus=BAND["high"]["bus"],
                   overlap=True).values())
    hi = sum(_step(cfg, dims, recompute, b, m, stages, gemm_scale=BAND["low"]["gemm"], bus=BAND["low"]["bus"],
                   overlap=False).values())
    return lo, hi


def with_band(cfg: PlanConfig, x: Layout) -> Layout:
    """``x`` with its uncertainty band filled in."""
    return replace(x, band_s=_band(cfg, x.dims, x.recompute, x.micro_batch, x.micro_batches, x.stages))
