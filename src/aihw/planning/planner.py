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
from dataclasses import dataclass, field, fields, replace
from typing import Literal, get_args

from aihw._validate import (
    require_bool,
    require_choice,
    require_finite_result,
    require_in_range,
    require_instance,
    require_non_negative,
    require_positive,
)
from aihw.catalogue.hardware import get_chip
from aihw.catalogue.networks import get_network
from aihw.comm import collectives as cc
from aihw.layout.dims import ParallelDims, divisors, stage_layers
from aihw.memory.estimator import PRECISION_BYTES, MemoryConfig, _grad_split, _stage_params, per_device_bytes
from aihw.transformer.flops import Recompute, flops_per_token, model_flops_per_token
from aihw.transformer.shapes import ModelShape, resolve_model

RECOMPUTE: tuple[Recompute, ...] = get_args(Recompute)
Attention = Literal["fused", "eager"]  # FlashAttention-style kernels (no s x s scores stored) or eager scores
ATTENTION: tuple[Attention, ...] = get_args(Attention)
MAX_DEVICES = 1 << 22  # 4M chips: beyond any cluster built; bounds the search
MAX_PP = 128
CP_CHOICES = (1, 2, 4, 8, 16, 32)
VIRTUAL_CHOICES = (1, 2, 4)
BAND_TOP = 20  # layouts whose uncertainty band is computed (the top of the ranking)

# Best share of dense bf16 peak that a tuned matmul reached in a published benchmark, per chip. Source: Stas
# Bekman, "Maximum Achievable Matmul FLOPS comparison table", ml-engineering, compute/accelerator/README.md
# (https://github.com/stas00/ml-engineering/blob/master/compute/accelerator/README.md), read 2026-12-01:
# A100 SXM 267.9 of 312 TFLOP/s (85.9 %, CUDA 12.1), H100 SXM 792.1 of 989 (80.1 %, CUDA 12.1), GH200 821.0 of
# 989 (83.0 %, CUDA 12.5; used for H200, the same Hopper die with faster memory), MI300X 781.9 of 1300 (60.1 %,
# ROCm 6.2). Chips not in that table use DEFAULT_GEMM_FRACTION, and the assumptions say so.
GEMM_FRACTION: dict[str, float] = {
    "a100-80gb-sxm": 0.859, "a100-40gb-sxm": 0.859, "h100-sxm": 0.801, "h200": 0.830, "mi300x": 0.601,
}
# Fused attention kernels reach less of peak than plain matmuls: FlashAttention-2 "reaching 50-73% of the
# theoretical maximum FLOPs/s on A100" (Dao 2023, arXiv:2307.08691, abstract), against 85.9% for a matmul there.
# The midpoint, 61.5%, is 0.72 of the matmul fraction; that ratio is applied on every chip (an assumption
# beyond A100).
ATTENTION_TO_GEMM = 0.615 / 0.859
# FlashAttention's backward pass recomputes the scores S = Q K^T (it never stored them) and then runs dV = P^T dO,
# dP = dO V^T, dQ = dS K, dK = dS^T Q: 5 matmuls of the forward's 2 (Dao et al. 2022, arXiv:2205.14135,
# Algorithm 4 (backward pass), read 2026-12-01), so fused attention's backward costs 2.5 x its forward.
FUSED_ATTENTION_BACKWARD = 2.5
DEFAULT_GEMM_FRACTION = 0.80  # assumption for chips without a published MAMF figure (B200, TPUs, ...)
GEMM_SOURCE = "https://github.com/stas00/ml-engineering/blob/master/compute/accelerator/README.md"

# Achieved bus bandwidth of large NCCL collectives (nccl-tests busbw, doc/PERFORMANCE.md) as a share of line rate.
# Inside a node: 8 x A100 SXM4 all_reduce busbw 230-250 GB/s at large sizes against NVLink 3's 300 GB/s per
# direction (0.77-0.83); 8 x H100 SXM5 460-480 GB/s, above NVLink 4's 450 because NCCL 2.17+ reduces in the
# NVSwitch (NVLink SHARP; the nvls option). Source: Alaya NeW Cloud, "NCCL-tests in practice", reference numbers,
# https://docs.alayanew.com/en/docs/tech-blog/2026-05-06-nccl-tests (read 2026-12-01). Across nodes: 0.90 of the
# port rate is ASSUMED (vendor validation guides expect 400-450 GB/s all_reduce busbw for 8 x H100 + 8 NDR ports,
# https://saturncloud.io/blog/crusoe-nccl-cluster-validation, read 2026-12-01, which bounds it only loosely).
BUS_FRACTION = {"intra": 0.80, "inter": 0.90}
# NVLink SHARP (in-switch reduction): 470 GB/s measured busbw (above) against 0.80 x 450 = 360 GB/s for a ring: x1.3.
NVLS_SPEEDUP = 1.3

# Element-wise values read + written per token per layer in the forward pass, in units of hidden (fused
# kernels, Megatron-style): 2 norms (in + out: 4), 2 bias-dropout-residual adds (2 in + 1 out each: 6),
# rotary/bias on Q, K (2). The MLP activation adds (2 + 1) x its width per token (GELU: in + out; SwiGLU:
# gate, up in, out). Eager attention adds ~4 passes over the s x s scores per head (scale+mask, softmax,
# dropout: read + write), at 2 bytes.
ELEMENTWISE_H = 12
EAGER_SCORE_PASSES = 4
Elementwise = Literal["fused", "eager"]  # Megatron-style fused kernels, or eager PyTorch ops one by one
ELEMENTWISE: tuple[Elementwise, ...] = get_args(Elementwise)


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

# The one fitted constant: share of the step lost to what the model does not count (kernel launch gaps,
# optimizer step, data loading, synchronisation). Fitted once by least squares on log(predicted/published) over
# the 10 rows of Narayanan et al. 2021 Table 1 (aihw.planning.published.fit_overhead), then frozen here.
STEP_OVERHEAD = 0.11

# Uncertainty band: pessimistic / optimistic multipliers on the efficiency assumptions.
BAND = {"low": {"gemm": 0.92, "bus": 0.75, "overlap": False}, "high": {"gemm": 1.04, "bus": 1.1, "overlap": True}}


DEFAULT_NETWORK = {"gpu": "InfiniBand NDR", "tpu": "TPU data-center network (DCN)"}  # Cluster(network="auto")


@dataclass(frozen=True)
class Cluster:
    """Identical nodes of ``chips_per_node`` catalogue chips joined by one ``network`` port per chip.

    Nodes of 8 GPUs (DGX/HGX), NVL72 racks (``chips_per_node=72``, NVLink 5 chips) or TPU slices (the slice's
    chips as one node on ICI) are all described this way.
    """

    chip: str = "H100 SXM"  # catalogue name; its interconnect (NVLink, ICI, ...) links chips inside a node
    chips_per_node: int = 8
    nodes: int = 4
    network: str = "auto"  # inter-node port per chip (data/networks.toml); "auto": InfiniBand NDR for GPUs,
    #   the TPU data-center network (DCN) for TPU slices
    intra_alpha_s: float = cc.DEFAULT_CHIP_ALPHA_S  # assumed start-up latency per message, seconds
    inter_alpha_s: float = cc.DEFAULT_NETWORK_ALPHA_S
    nvls: bool = False  # NVLink SHARP (in-switch reduction) for all-reduces inside a node

    def __post_init__(self) -> None:
        require_positive("chips_per_node", self.chips_per_node, integer=True)
        require_positive("nodes", self.nodes, integer=True)
        if self.chips_per_node * self.nodes > MAX_DEVICES:
            raise ValueError(f"nodes x chips_per_node = {self.nodes} x {self.chips_per_node} = "
                             f"{self.nodes * self.chips_per_node:,} chips; the planner handles at most "
                             f"{MAX_DEVICES:,}")
        chip = get_chip(self.chip)
        object.__setattr__(self, "chip", chip.name)
        joins = "tpu" if chip.kind == "tpu" else "gpu"
        if str(self.network).strip().lower() == "auto":
            object.__setattr__(self, "network", DEFAULT_NETWORK[joins])
        network = get_network(self.network)
        if network.joins != joins:
            what = {"gpu": "GPU nodes", "tpu": "TPU slices"}
            raise ValueError(f"network {network.name!r} joins {what[network.joins]}, but {chip.name} is a "
                             f"{joins.upper()}: use --network auto ({DEFAULT_NETWORK[joins]}) or another network "
                             f"that joins {what[joins]}")
        object.__setattr__(self, "network", network.name)
        require_in_range("intra_alpha_s", self.intra_alpha_s, 0, 1)
        require_in_range("inter_alpha_s", self.inter_alpha_s, 0, 1)

    @property
    def devices(self) -> int:
        return self.chips_per_node * self.nodes

    def intra_link(self) -> cc.LinkModel:
        return _intra(self.chip, self.intra_alpha_s)

    def inter_link(self) -> cc.LinkModel:
        return _inter(self.network, self.inter_alpha_s)


@functools.lru_cache(maxsize=64)
def _intra(chip: str, alpha: float) -> cc.LinkModel:
    return cc.link_from_chip(chip, alpha_s=alpha)


@functools.lru_cache(maxsize=64)
def _inter(network: str, alpha: float) -> cc.LinkModel:
    return cc.network_link(network, alpha_s=alpha)


@dataclass(frozen=True)
class Efficiency:
    """The efficiency assumptions of the step model (defaults: sourced values, see the module constants)."""

    gemm_fraction: float | None = None  # share of dense peak a large matmul reaches; None: GEMM_FRACTION[chip]
    intra_bus: float = BUS_FRACTION["intra"]
    inter_bus: float = BUS_FRACTION["inter"]
    overlap: bool = True  # DP gradients, ZeRO-3 gathers and CP passes overlap compute where they can
    flat_collectives: bool = False  # collectives spanning nodes as one flat ring whose every byte crosses the
    #   network port (no NVLink stage): what DeepSpeed's 2021 ZeRO-3 runs look like (aihw.planning.published)
    zero3_regather_recompute: bool = False  # ZeRO-3 gathers the parameters again for the recomputed forward
    #   (DeepSpeed's per-module hooks fire on every forward); FSDP keeps them gathered through the block's backward
    zero3_overlap_reduce: bool = True  # the gradient reduce-scatter overlaps the backward pass
    step_overhead: float = STEP_OVERHEAD

    def __post_init__(self) -> None:
        if self.gemm_fraction is not None:
            require_in_range("gemm_fraction", self.gemm_fraction, 0, 1, low_inclusive=False)
        require_in_range("intra_bus", self.intra_bus, 0, 1.5, low_inclusive=False)
        require_in_range("inter_bus", self.inter_bus, 0, 1.5, low_inclusive=False)
        require_in_range("step_overhead", self.step_overhead, 0, 0.9)


@dataclass(frozen=True)
class PlanConfig:
    """What to train, on what, and which layouts to consider (None: search that degree)."""

    model: ModelShape | str = "llama-2-13b"  # a preset name, a .toml model file or a ModelShape
    cluster: Cluster = Cluster()
    global_batch: int = 512  # sequences per optimizer step
    seq: int | None = None  # tokens per sequence; None: the model's context length
    micro_batch: int | None = 1  # sequences per micro-batch; None: search 1, 2, 4
    precision: str = "bf16"  # weights and activations (see aihw.memory.estimator)
    optimizer: str = "adamw"
    grad_precision: str = "fp32"  # "fp32" (Megatron/DeepSpeed keep fp32 gradients) or "param"
    zero_stages: tuple[int, ...] = (0, 1, 2, 3)
    recompute: tuple[Recompute, ...] = RECOMPUTE
    attention: Attention = "fused"  # "fused" (FlashAttention: no s x s scores stored) or "eager"
    elementwise: Elementwise = "fused"  # "fused" (Megatron-style kernels) or "eager" (PyTorch ops one by one)
    sequence_parallel: bool = True  # Megatron sequence parallelism alongside TP
    memory_fraction: float = 0.9  # usable share of each chip's memory (the rest: framework, fragmentation)
    tp: int | None = None
    pp: int | None = None
    dp: int | None = None
    cp: int | None = None
    ep: int | None = None
    virtual_stages: int | None = None  # interleaved 1F1B chunks per device (None: search 1, 2, 4)
    schedule: str = "1f1b"  # "1f1b" (interleaved when virtual_stages > 1) or "gpipe" (same bubble, m in flight)
    micro_batches: int | None = None  # pin m (micro-batches per pipeline and step)
    zero3_keep_gathered: bool = False
    efficiency: Efficiency = Efficiency()
    max_tp: int | None = None  # largest TP searched (None: chips per node)

    def __post_init__(self) -> None:
        object.__setattr__(self, "model", resolve_model(self.model))
        require_positive("global_batch", self.global_batch, integer=True)
        if self.micro_batch is not None:
            require_positive("micro_batch", self.micro_batch, integer=True)
        if self.seq is not None:
            require_positive("seq", self.seq, integer=True)
        require_in_range("memory_fraction", self.memory_fraction, 0, 1, low_inclusive=False)
        if self.precision not in PRECISION_BYTES or PRECISION_BYTES[self.precision] < 2:
            raise ValueError(f"precision {self.precision!r}: the planner trains in fp32, tf32, bf16 or fp16")
        for flag in ("sequence_parallel", "zero3_keep_gathered"):
            require_bool(flag, getattr(self, flag))
        require_choice("grad_precision", self.grad_precision, ("fp32", "param"))
        require_choice("attention", self.attention, ATTENTION)
        require_choice("elementwise", self.elementwise, ELEMENTWISE)
        require_choice("schedule", self.schedule, ("1f1b", "gpipe"))
        if self.schedule == "gpipe" and self.virtual_stages not in (None, 1):
            raise ValueError(f"virtual_stages={self.virtual_stages} is the interleaved 1F1B schedule; "
                             "GPipe runs one chunk per device")
        if not self.zero_stages or any(isinstance(z, bool) or z not in (0, 1, 2, 3) for z in self.zero_stages):
            raise ValueError(f"zero_stages must be a non-empty subset of (0, 1, 2, 3), got {self.zero_stages!r}")
        if not self.recompute or any(r not in RECOMPUTE for r in self.recompute):
            raise ValueError(f"recompute must be a non-empty subset of {RECOMPUTE}, got {self.recompute!r}")
        get_chip(self.cluster.chip).peak_flops(self.precision)  # raises if the chip has no such mode
        _check_pins(self)

    @property
    def shape(self) -> ModelShape:
        """The model as a ModelShape (``model`` may be given as a name or a file; it is resolved on creation)."""
        assert isinstance(self.model, ModelShape)
        return self.model

    @property
    def tokens(self) -> int:
        return self.seq or self.shape.max_seq

    def __hash__(self) -> int:
        # The step model's caches are keyed on the configuration and a search looks them up thousands of times:
        # hash the nested model, cluster and efficiencies once (the fields are frozen), not at every look-up.
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hash(tuple(getattr(self, f.name) for f in fields(self)))
            object.__setattr__(self, "_hash", cached)
        return cached

    def __getstate__(self) -> dict:  # copies and pickles recompute the hash (string hashes differ per process)
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}


@dataclass(frozen=True)
class Layout:
    """One candidate: degrees, per-device memory (bytes), the step's terms (seconds) and its rates."""

    dims: ParallelDims
    recompute: str
    micro_batch: int
    micro_batches: int  # m per pipeline per step
    stages: tuple[int, ...]  # layers per pipeline chunk
    memory_bytes: float
    fits: bool
    breakdown: dict = field(default_factory=dict)  # seconds per term
    tokens_per_step: int = 0
    model_flops_per_step: float = 0.0
    executed_flops_per_step: float = 0.0
    peak_flops: float = 1.0
    band_s: tuple[float, float] = (0.0, 0.0)  # step seconds under optimistic / pessimistic assumptions

    @property
    def dp(self) -> int:
        return self.dims.dp

    @property
    def tp(self) -> int:
        return self.dims.tp

    @property
    def pp(self) -> int:
        return self.dims.pp

    @property
    def zero(self) -> int:
        return self.dims.zero

    @property
    def step_s(self) -> float:
        return sum(self.breakdown.values())

    @property
    def times(self) -> dict:  # older name
        return self.breakdown

    @property
    def tokens_per_second(self) -> float:
        return self.tokens_per_step / self.step_s

    @property
    def model_tflops_per_device(self) -> float:
        return self.model_flops_per_step / (self.step_s * self.dims.devices) / 1e12

    @property
    def executed_tflops_per_device(self) -> float:
        return self.executed_flops_per_step / (self.step_s * self.dims.devices) / 1e12

    @property
    def mfu(self) -> float:
        return self.model_tflops_per_device * 1e12 / self.peak_flops

    @property
    def mfu_achieved(self) -> float:  # older name
        return self.mfu

    @property
    def label(self) -> str:
        v = self.dims.virtual_stages
        return (f"{self.dims.label.split(',')[0]}, ZeRO-{self.zero}, recompute {self.recompute}, "
                f"micro-batch {self.micro_batch}" + (f", {v} virtual stages" if v > 1 else ""))

    def to_dict(self) -> dict:
        d = self.dims
        if not self.breakdown:  # too big for memory: not timed
            return {"dp": d.dp, "tp": d.tp, "pp": d.pp, "cp": d.cp, "ep": d.ep, "zero": d.zero,
                    "virtual_stages": d.virtual_stages, "recompute": self.recompute,
                    "micro_batch": self.micro_batch, "micro_batches": self.micro_batches, "fits": self.fits,
                    "per_device_bytes": self.memory_bytes, "memory_bytes": self.memory_bytes}
        return {"dp": d.dp, "tp": d.tp, "pp": d.pp, "cp": d.cp, "ep": d.ep, "zero": d.zero,
                "virtual_stages": d.virtual_stages, "recompute": self.recompute, "micro_batch": self.micro_batch,
                "micro_batches": self.micro_batches, "stage_layers": list(self.stages), "fits": self.fits,
                "per_device_bytes": self.memory_bytes, "memory_bytes": self.memory_bytes,
                "step_seconds": self.step_s, "step_s": self.step_s,
                "step_seconds_band": list(self.band_s), "tokens_per_second": self.tokens_per_second,
                "model_tflops_per_device": self.model_tflops_per_device,
                "executed_tflops_per_device": self.executed_tflops_per_device, "mfu": self.mfu,
                "breakdown": dict(self.breakdown), "times_s": dict(self.breakdown)}


# --- the step model --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Chip:
    peak: float
    hbm: float
    gemm: float


@functools.lru_cache(maxsize=4096)
def _chip(cfg: PlanConfig, scale: float = 1.0) -> _Chip:
    chip = get_chip(cfg.cluster.chip)
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
    bpv = 4 if PRECISION_BYTES[cfg.precision] == 4 else 2
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


def _link_for(cfg: PlanConfig, stride: int, ranks: int) -> tuple[int, int]:
    """(members per node, nodes spanned) of a group of ``ranks`` ranks ``stride`` apart."""
    per_node = max(1, min(ranks, cfg.cluster.chips_per_node // stride)) if stride < cfg.cluster.chips_per_node else 1
    return per_node, max(1, ranks // per_node)


@functools.lru_cache(maxsize=16384)  # a search asks for the same few hundred collectives thousands of times
def _collective(cfg: PlanConfig, kind: str, n_bytes: float, ranks: int, stride: int, bus: float = 1.0) -> float:
    """Seconds of one collective of ``n_bytes`` (per rank's full buffer) over ``ranks`` ranks ``stride`` apart.

    Hierarchical when the group spans nodes: the intra-node part on the chip link, the rest on the network
    (one port per chip, all rails at once). Bandwidths at BUS_FRACTION of line rate (scaled by ``bus``).
    """
    if ranks <= 1 or n_bytes <= 0:
        return 0.0
    cl, eff = cfg.cluster, cfg.efficiency
    intra, inter = cl.intra_link(), cl.inter_link()
    bw_in = intra.bandwidth_bytes_per_s * min(1.0, eff.intra_bus * bus)
    bw_out = inter.bandwidth_bytes_per_s * min(1.0, eff.inter_bus * bus)
    g, k = _link_for(cfg, stride, ranks)
    if kind == "send_recv":
        return (intra.alpha_s + n_bytes / bw_in) if g > 1 or ranks == 1 else inter.alpha_s + n_bytes / bw_out
    if kind == "all_to_all":
        local = (g - 1) / ranks * n_bytes / bw_in
        remote = (ranks - g) / ranks * n_bytes / bw_out
        return (ranks - 1) * (intra.alpha_s if k == 1 else inter.alpha_s) + local + remote
    half = 0.0  # reduce-scatter (= all-gather) time
    if eff.flat_collectives and k > 1:
        half = (ranks - 1) * inter.alpha_s + (ranks - 1) / ranks * n_bytes / bw_out
        return 2 * half if kind == "all_reduce" else half
    if g > 1:
        half += (g - 1) * intra.alpha_s + (g - 1) / g * n_bytes / bw_in
    if k > 1:
        half += (k - 1) * inter.alpha_s + (k - 1) / k * (n_bytes / g) / bw_out
    if kind == "all_reduce":
        if cl.nvls and k == 1:
            return 2 * half / NVLS_SPEEDUP
        return 2 * half
    return half  # all_gather / reduce_scatter


def _step(cfg: PlanConfig, dims: ParallelDims, recompute: str, b: int, m: int, stages: tuple[int, ...],
          *, gemm_scale: float = 1.0, bus: float = 1.0, overlap: bool | None = None,
          mem: MemoryConfig | None = None) -> dict:
    """Seconds per term of one optimizer step (see the module docstring).

    ``mem``: the layout's :func:`_memory_config`, when the caller has it already.
    """
    eff = cfg.efficiency
    overlap = eff.overlap if overlap is None else overlap
    ch = _chip(cfg, gemm_scale)
    mdl, s = cfg.shape, cfg.tokens
    tp, pp, cp, ep, dp, v = dims.tp, dims.pp, dims.cp, dims.ep, dims.dp, dims.virtual_stages
    bpv = 4 if PRECISION_BYTES[cfg.precision] == 4 else 2
    fwd, fwd_bwd_extra, attn = _layer_seconds(cfg, ch, tp, cp, ep, b, recompute)
    layer = fwd + fwd_bwd_extra
    head = _head_seconds(cfg, ch, tp, cp, b)
    # per device: its chunks' layers; the head sits on the last device, the embedding (a lookup) on the first
    per_device = _device_layers(stages, pp, v)
    device_time = [n * layer for n in per_device]
    device_time[-1] += head
    slowest = max(device_time)
    compute = m * slowest
    bubble = (pp - 1) / v * slowest if pp > 1 else 0.0
    # tensor parallel: 2 collectives per layer in forward, 2 in backward (+2 recomputed): AR or AG + RS pairs
    payload = b * s / cp * mdl.hidden * bpv
    per_layer_colls = 6 if recompute == "full" else 4
    tp_one = _collective(cfg, "all_reduce", payload, tp, 1, bus)
    layers_dev = max(per_device)
    tp_comm = m * layers_dev * per_layer_colls * tp_one
    # context parallel: (cp - 1) key/value block passes forward, twice that backward, hidden behind attention
    cp_comm = 0.0
    if cp > 1:
        block = 2 * b * (s / cp) * mdl.kv_dim / tp * bpv
        one = _collective(cfg, "send_recv", block, cp, tp, bus)
        passes = 3 * (cp - 1) * one * (1.5 if recompute != "none" else 1.0)
        hidden = 3 * attn if overlap else 0.0
        cp_comm = m * layers_dev * max(0.0, passes - hidden)
    # expert parallel: dispatch + combine all-to-all, forward and backward (+ forward again if recomputed)
    ep_comm = 0.0
    if mdl.is_moe and ep > 1:
        routed = b * s / cp * mdl.top_k * mdl.capacity_factor * mdl.hidden * bpv / (tp if cfg.sequence_parallel
                                                                                     else 1)
        one = _collective(cfg, "all_to_all", routed, ep, tp, bus)
        ep_comm = m * layers_dev * (6 if recompute == "full" else 4) * one
    # pipeline: an activation forward and a gradient back per micro-batch and chunk boundary
    pp_comm = 0.0
    if pp > 1:
        act = payload / (tp if cfg.sequence_parallel else 1)
        one = _collective(cfg, "send_recv", act, 2, tp * cp * dp, bus)
        pp_comm = 2 * v * m * one
    # data parallel: gradients of this device's parameters (ZeRO >= 1: reduce-scatter + all-gather of params)
    if mem is None:
        mem = _memory_config(cfg, dims, recompute, b, m, stages)
    params = _stage_params(mem)  # the memory chapter's parameter count per device
    grad_bytes = _grad_split(mem)[0]  # the model gradient is what is reduced (fp16 runs: fp16; bf16: fp32 main)
    w_bytes = PRECISION_BYTES[cfg.precision]
    dp_ranks, dp_stride = dp, tp * cp
    grads = _collective(cfg, "all_reduce", params * min(grad_bytes, 4), dp_ranks, dp_stride, bus)
    window = (fwd_bwd_extra * layers_dev) if overlap else 0.0  # last micro-batch's backward
    dp_comm = max(0.0, grads - window)
    if dims.zero == 3 and dp > 1:
        gather = _collective(cfg, "all_gather", params * w_bytes, dp_ranks, dp_stride, bus)
        scatter = _collective(cfg, "reduce_scatter", params * min(grad_bytes, 4), dp_ranks, dp_stride, bus)
        rounds = 1 if cfg.zero3_keep_gathered else m
        gathers = zero3_gathers_per_micro_batch(recompute, regather=eff.zero3_regather_recompute)
        hidden = rounds * gathers * gather + (rounds * scatter if eff.zero3_overlap_reduce else 0.0)
        exposed = 0.0 if eff.zero3_overlap_reduce else rounds * scatter
        dp_comm = max(0.0, hidden - (compute if overlap else 0.0)) + exposed
    terms = {"compute": compute, "bubble": bubble, "tp_comm": tp_comm, "cp_comm": cp_comm, "ep_comm": ep_comm,
             "pp_comm": pp_comm, "dp_comm": dp_comm}
    terms["overhead"] = eff.step_overhead / (1 - eff.step_overhead) * sum(terms.values())
    return terms


@functools.lru_cache(maxsize=4096)
def _device_layers(stages: tuple[int, ...], pp: int, v: int) -> tuple[int, ...]:
    """Layers on each pipeline device: its ``v`` chunks' layers."""
    return tuple(sum(stages[c * pp + d] for c in range(v)) for d in range(pp))


@functools.lru_cache(maxsize=4096)
def _stage_layers(layers: int, pp: int, v: int) -> tuple[int, ...]:
    return stage_layers(layers, pp, virtual_stages=v)


def zero3_gathers_per_micro_batch(recompute: str, *, regather: bool) -> int:
    """Parameter all-gathers ZeRO-3 runs per micro-batch: one per forward pass executed, one for backward.

    Forward and backward each need the full layer weights (2). With full recomputation the recomputed forward
    needs them once more: an implementation that releases them after every forward and gathers on every
    forward (``regather``, DeepSpeed's per-module hooks) pays a third gather; FSDP, which keeps a block's
    parameters gathered from its recomputation through its backward, does not.
    """
    return 3 if regather and recompute == "full" else 2


def _memory_config(cfg: PlanConfig, dims: ParallelDims, recompute: str, b: int, m: int,
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
    m, stages = _split(cfg, dims, micro_batch)
    mem = _memory_config(cfg, dims, recompute, micro_batch, m, stages)
    return _evaluate(cfg, dims, recompute, micro_batch, m, stages, mem, band=band, time_if_too_big=time_if_too_big)


def _split(cfg: PlanConfig, dims: ParallelDims, b: int) -> tuple[int, tuple[int, ...]]:
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
    chip = get_chip(cfg.cluster.chip)
    tokens = cfg.global_batch * cfg.tokens
    return (cfg.memory_fraction * chip.memory_bytes, tokens, model_flops_per_token(cfg.shape, cfg.tokens) * tokens,
            chip.peak_flops(cfg.precision))


@functools.lru_cache(maxsize=256)
def _executed_flops(cfg: PlanConfig, recompute: Recompute) -> float:
    return flops_per_token(cfg.shape, cfg.tokens, recompute=recompute) * (cfg.global_batch * cfg.tokens)


def _evaluate(cfg: PlanConfig, dims: ParallelDims, recompute: str, b: int, m: int, stages: tuple[int, ...],
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


# --- the search -------------------------------------------------------------------------------------------------

def _check_pins(cfg: PlanConfig) -> None:
    """Pinned degrees must suit the model and the cluster; ValueError naming the value and what would do."""
    mdl, n, cpn = cfg.shape, cfg.cluster.devices, cfg.cluster.chips_per_node
    for name in ("tp", "pp", "dp", "cp", "ep", "virtual_stages", "micro_batches"):
        if getattr(cfg, name) is not None:
            require_positive("micro_batches (m)" if name == "micro_batches" else name, getattr(cfg, name),
                             integer=True)
    dims = ParallelDims(dp=cfg.dp or 1, tp=cfg.tp or 1, pp=cfg.pp or 1, cp=cfg.cp or 1, ep=1,
                        virtual_stages=cfg.virtual_stages or 1 if cfg.pp not in (None, 1) else 1)
    dims.validate_model(mdl, seq=cfg.tokens)
    if cfg.ep is not None:
        if cfg.ep > 1 and not mdl.is_moe:
            raise ValueError(f"ep={cfg.ep} needs a mixture-of-experts model; {mdl.name} is dense (experts = 0)")
        if mdl.is_moe and mdl.experts % cfg.ep:
            raise ValueError(f"ep={cfg.ep} must divide the {mdl.experts} experts of {mdl.name}; "
                             f"possible: {divisors(mdl.experts)}")
    if cfg.tp is not None and cpn % cfg.tp and cfg.tp % cpn:
        raise ValueError(f"tp={cfg.tp} cannot fill nodes of {cpn} chips: a tensor-parallel group must fit a "
                         f"node evenly or span whole nodes; possible: "
                         f"{[d for d in divisors(math.gcd(mdl.heads, mdl.hidden)) if cpn % d == 0 or d % cpn == 0]}")
    pinned = {k: getattr(cfg, k) for k in ("dp", "tp", "pp", "cp") if getattr(cfg, k) is not None}
    product = math.prod(pinned.values()) if pinned else 1
    if n % product or (len(pinned) == 4 and product != n):
        text = " x ".join(f"{k}" for k in pinned)
        values = " x ".join(str(v) for v in pinned.values())
        if len(pinned) == 1:
            text, values = f"{text}={values}", ""
        raise ValueError(f"{text}{' = ' + values + ' =' if values else ','} {product if values else ''}"
                         f"{'' if values else 'which'}{', which' if values else ''} {'does not divide' if n % product else 'is not'} "
                         f"the cluster's {n} chips")
    if cfg.micro_batch is not None and cfg.global_batch % cfg.micro_batch:
        raise ValueError(f"global batch {cfg.global_batch} is not a multiple of the micro-batch {cfg.micro_batch}")
    if cfg.dp is not None and cfg.micro_batch is not None and cfg.global_batch % (cfg.dp * cfg.micro_batch):
        raise ValueError(f"global batch {cfg.global_batch} does not split into dp x micro-batch = "
                         f"{cfg.dp} x {cfg.micro_batch} = {cfg.dp * cfg.micro_batch}")
    if cfg.virtual_stages not in (None, 1) and cfg.pp in (None, 1):
        raise ValueError(f"virtual_stages={cfg.virtual_stages} needs a pinned pp > 1")
    if cfg.micro_batches is not None and cfg.micro_batch is not None and cfg.dp is not None:
        m = cfg.global_batch // (cfg.dp * cfg.micro_batch)
        if m != cfg.micro_batches:
            raise ValueError(f"the pins conflict: micro_batches={cfg.micro_batches}, but global_batch / (dp x "
                             f"micro_batch) = {cfg.global_batch} / ({cfg.dp} x {cfg.micro_batch}) = {m}")


def _candidates(cfg: PlanConfig) -> tuple[list[tuple], list[tuple[str, str]]]:
    """Degree combinations worth evaluating, and the rejected ones with their reason."""
    mdl, n, cpn, s = cfg.shape, cfg.cluster.devices, cfg.cluster.chips_per_node, cfg.tokens
    max_tp = cfg.max_tp or cpn
    tps = [cfg.tp] if cfg.tp else [d for d in divisors(math.gcd(mdl.heads, mdl.hidden))
                                   if d <= max_tp and (cpn % d == 0) and n % d == 0 and mdl.ffn_dim % d == 0
                                   and (mdl.n_kv_heads % d == 0 or d % mdl.n_kv_heads == 0)]
    cps = [cfg.cp] if cfg.cp else [c for c in CP_CHOICES if s % c == 0 and (c == 1 or s // c >= 2048)]
    bs = [cfg.micro_batch] if cfg.micro_batch else [1, 2, 4]
    out, rejected = [], []
    for tp in tps:
        for cp in cps:
            if n % (tp * cp):
                continue
            rest = n // (tp * cp)
            pps = [cfg.pp] if cfg.pp else [p for p in divisors(rest) if p <= min(MAX_PP, mdl.layers)]
            for pp in pps:
                if rest % pp:
                    continue
                dp = rest // pp
                if cfg.dp not in (None, dp):
                    continue
                for b in bs:
                    label = f"DP{dp} x TP{tp} x PP{pp}" + (f" x CP{cp}" if cp > 1 else "")
                    if cfg.global_batch % (dp * b):
                        rejected.append((label, f"global batch {cfg.global_batch} is not a multiple of "
                                                f"dp x micro-batch = {dp} x {b} = {dp * b}"))
                        continue
                    m = cfg.global_batch // (dp * b)
                    if cfg.micro_batches not in (None, m):
                        rejected.append((label, f"m = global_batch / (dp x micro_batch) = {m}, not the "
                                                f"requested {cfg.micro_batches}"))
                        continue
                    eps = [cfg.ep] if cfg.ep else ([e for e in divisors(mdl.experts) if (dp * cp) % e == 0
                                                    and e <= cpn] if mdl.is_moe else [1])
                    vs = [cfg.virtual_stages or 1] if cfg.virtual_stages or pp == 1 or cfg.schedule == "gpipe" else \
                        [v for v in VIRTUAL_CHOICES if pp * v <= mdl.layers and (v == 1 or m % pp == 0)]
                    for ep in eps:
                        if (dp * cp) % ep:
                            rejected.append((label, f"ep={ep} does not divide dp x cp = {dp * cp}"))
                            continue
                        for v in vs:
                            out.append((dp, tp, pp, cp, ep, v, b))
    return out, rejected


@dataclass(frozen=True)
class Plan:
    """Fitting layouts ranked by step time, what was dropped, and the assumptions behind every number."""

    config: PlanConfig
    ranked: tuple[Layout, ...]
    too_big: tuple[Layout, ...]
    rejected: tuple[tuple[str, str], ...]
    assumptions: tuple[str, ...]

    @property
    def best(self) -> Layout | None:
        return self.ranked[0] if self.ranked else None

    def to_dict(self, top: int = 10) -> dict:
        cfg, cl = self.config, self.config.cluster
        layouts = [{**x.to_dict(), "assumptions": list(self.assumptions)} for x in self.ranked[:top]]
        return {"model": cfg.shape.name,
                "cluster": {"chip": cl.chip, "chips_per_node": cl.chips_per_node, "nodes": cl.nodes,
                            "network": cl.network, "nvls": cl.nvls},
                "global_batch": cfg.global_batch, "seq": cfg.tokens, "attention": cfg.attention,
                "sequence_parallel": cfg.sequence_parallel, "layouts": layouts, "ranked": layouts,
                "fitting": len(self.ranked),
                "too_big": len(self.too_big), "smallest_too_big": self.too_big[0].to_dict() if self.too_big else None,
                "rejected": [list(r) for r in self.rejected[:50]], "rejected_count": len(self.rejected),
                "why": explain(self), "assumptions": list(self.assumptions)}


def _assumptions(cfg: PlanConfig) -> tuple[str, ...]:
    cl, chip, eff = cfg.cluster, get_chip(cfg.cluster.chip), cfg.efficiency
    intra, inter = cl.intra_link(), cl.inter_link()
    frac = eff.gemm_fraction or GEMM_FRACTION.get(chip.key)
    gemm_note = (f"{frac:.1%} of peak (published maximum achievable matmul, {GEMM_SOURCE})" if frac
                 else f"{DEFAULT_GEMM_FRACTION:.0%} of peak (ASSUMED: no published matmul benchmark for this chip)")
    return (
        f"{cl.nodes} node(s) x {cl.chips_per_node} {chip.name}: dense {cfg.precision} peak "
        f"{chip.peak_flops(cfg.precision) / 1e12:,.0f} TFLOP/s, HBM {chip.bandwidth_bytes_per_s / 1e12:.2f} TB/s, "
        f"memory {chip.memory_bytes / 1e9:,.0f} GB ({cfg.memory_fraction:.0%} usable).",
        f"Each matmul: roofline of its per-device shape, compute ceiling {gemm_note}; element-wise work at HBM "
        f"bandwidth; attention {cfg.attention}"
        + (f" (fused kernels at {ATTENTION_TO_GEMM:.2f} x the matmul fraction: FlashAttention-2's 50-73% on A100)"
           if cfg.attention == "fused" else " (scores written to memory; softmax at HBM bandwidth)") + ".",
        f"Inside a node: {intra.name}, {intra.bandwidth_bytes_per_s / 1e9:,.0f} GB/s per direction per chip at "
        f"{eff.intra_bus:.0%} achieved{' (NVLink SHARP all-reduce)' if cl.nvls else ''}"
        + (f"; between nodes: {inter.name}, {inter.bandwidth_bytes_per_s / 1e9:,.0f} GB/s per direction per chip at "
           f"{eff.inter_bus:.0%} achieved (nccl-tests bus bandwidth, assumed shares)." if cl.nodes > 1 else
           " (nccl-tests bus bandwidth, assumed share); one node, so no network between nodes."),
        "Ranks ordered TP, CP, DP (EP inside DP x CP), PP; collectives hierarchical across nodes.",
        "1F1B (interleaved when virtual stages > 1): bubble (p-1)/v slowest-stage micro-batch times; layers split "
        "as real runs split them (remainder on the middle stages, embedding/head stages lighter).",
        ("TP communication not overlapped; DP gradients overlap the last micro-batch's backward; ZeRO-3 gathers "
         "and CP ring passes overlap compute." if eff.overlap else "No communication overlapped.")
        + (f" ZeRO-3: {'3 parameter gathers with full recomputation' if eff.zero3_regather_recompute else '2 parameter gathers'}"
           f" per micro-batch, reduce-scatter {'overlapped' if eff.zero3_overlap_reduce else 'exposed'}"
           f"{', every byte through the network port (flat)' if eff.flat_collectives else ''}."),
        ("Element-wise work as eager PyTorch kernels (counted from torchtitan's Llama code)."
         if cfg.elementwise == "eager" else "Element-wise work in fused kernels (Megatron-LM style)."),
        f"A further {eff.step_overhead:.0%} of the step for what the model does not count (fitted once on "
        "Narayanan et al. 2021 Table 1; see aihw.planning.published).",
        f"Band: step time with matmul fraction x{BAND['high']['gemm']}, bus x{BAND['high']['bus']} and overlap "
        f"(optimistic) to x{BAND['low']['gemm']}, x{BAND['low']['bus']} and no overlap (pessimistic).",
        "Memory per device from aihw.memory (Korthikanti et al. 2022 activations; "
        f"{'Megatron-LM fp32 gradients' if cfg.grad_precision == 'fp32' else 'gradients in the weight precision'}"
        "; ZeRO-3 gather buffers of 2 layers).",
    )


def _vary(base: MemoryConfig, *, batch: int, micro_batches: int, zero: int, recompute: str) -> MemoryConfig:
    """``dataclasses.replace(base, ...)`` without running the memory estimator's checks again.

    The search sizes every micro-batch size, ZeRO stage and recomputation of one split (dp, tp, pp, cp, ep,
    virtual stages): ``base``, one of them, passed the checks, which the fields changed here cannot fail:
    PlanConfig checked ``zero_stages`` and ``recompute``, the micro-batch sizes are positive and divide the
    global batch (:func:`_candidates`, :func:`_split`). Re-validating each variant would be most of the search.
    """
    if (base.batch, base.micro_batches, base.zero, base.recompute) == (batch, micro_batches, zero, recompute):
        return base
    variant = object.__new__(MemoryConfig)
    variant.__dict__.update(base.__dict__, batch=batch, micro_batches=micro_batches, zero=zero, recompute=recompute)
    return variant


MAX_SEARCH_LAYOUTS = 50_000
"""The most layouts one plan() sizes (about 1.5 s on one core); a larger search is refused with a hint."""

_PIN_NAMES = ("dp", "tp", "pp", "cp", "ep", "virtual_stages", "micro_batch", "micro_batches")


def plan(cfg: PlanConfig) -> Plan:
    """Enumerate, size, time, drop what does not fit, rank by estimated step time.

    ValueError when no layout can even be formed (every candidate's batch split or degree is impossible):
    the message names the first reason.
    """
    require_instance("cfg", cfg, PlanConfig)
    given, cfg = cfg, _canonical(cfg)
    combos, rejected = _candidates(cfg)
    if not combos:
        reason = rejected[0][1] if rejected else (
            f"no tp/pp/dp/cp combination fills {cfg.cluster.devices} chips for {cfg.shape.name}")
        pins = ", ".join(f"{k}={getattr(given, k)}" for k in _PIN_NAMES if getattr(given, k) is not None)
        raise ValueError(f"no layout is possible{f' with the pins {pins}' if pins else ''}: {reason}")
    layouts = []
    zeros = cfg.zero_stages
    order = [r for r in RECOMPUTE if r in cfg.recompute]  # less recomputation is always faster
    work = len(combos) * len(zeros) * len(order)
    if work > MAX_SEARCH_LAYOUTS:
        raise ValueError(f"the search would size {work:,} layouts, more than the bound of {MAX_SEARCH_LAYOUTS:,} "
                         "(a few seconds); pin some degrees (tp, pp, dp, cp), the micro-batch or the ZeRO stage")
    dims_of: dict[tuple, ParallelDims] = {}  # a split's dims (one per ZeRO stage), shared by its micro-batch sizes
    base_of: dict[tuple, MemoryConfig] = {}  # a split's memory configuration, validated once (see _vary)
    for dp, tp, pp, cp, ep, v, b in combos:
        searched = [z for z in zeros if dp > 1 or z == min(zeros)]
        for zero in searched:
            dims = dims_of.get((dp, tp, pp, cp, ep, v, zero))
            if dims is None:
                dims = dims_of[dp, tp, pp, cp, ep, v, zero] = ParallelDims(dp=dp, tp=tp, pp=pp, cp=cp, ep=ep,
                                                                           zero=zero, virtual_stages=v)
            if zero == searched[0]:  # the layout's checks (the same for every ZeRO stage)
                m, stages = _split(cfg, dims, b)
                found = base_of.get((dp, tp, pp, cp, ep, v))
                if found is None:
                    found = base_of[dp, tp, pp, cp, ep, v] = _memory_config(cfg, dims, order[0], b, m, stages)
                base = found
            for recompute in order:
                mem = _vary(base, batch=b, micro_batches=m, zero=zero, recompute=recompute)
                x = _evaluate(cfg, dims, recompute, b, m, stages, mem, band=False, time_if_too_big=False)
                layouts.append(x)
                if x.fits:  # more recomputation would only be slower
                    break
    fits = sorted((x for x in layouts if x.fits), key=lambda x: (x.step_s, x.memory_bytes))
    fits[:BAND_TOP] = [with_band(cfg, x) for x in fits[:BAND_TOP]]
    too_big = tuple(sorted((x for x in layouts if not x.fits), key=lambda x: x.memory_bytes))
    return Plan(given, tuple(fits), too_big, tuple(rejected), _assumptions(cfg))


@functools.lru_cache(maxsize=64)
def _canonical(cfg: PlanConfig) -> PlanConfig:
    """The first configuration equal to ``cfg`` seen: the step model's caches then find their keys by identity,
    not by comparing every field of an equal copy (a repeated input builds a new, equal PlanConfig)."""
    return cfg


def explain(result: Plan) -> list[str]:
    """Sentences saying why the winner wins: its time terms, and what costs the runner-up more."""
    best = result.best
    if best is None:
        smallest = result.too_big[0] if result.too_big else None
        need = (f"; the smallest, {smallest.label}, needs {smallest.memory_bytes / 1e9:,.1f} GB per chip against "
                f"{result.config.memory_fraction * get_chip(result.config.cluster.chip).memory_bytes / 1e9:,.1f}"
                " GB usable") if smallest else ""
        return [f"No layout fits in memory{need}: add chips or nodes, recompute, or use a bigger-memory chip."]
    terms = ", ".join(f"{k} {v:.3g} s" for k, v in best.breakdown.items() if v > 0)
    lo, hi = best.band_s
    lines = [f"Best: {best.label}: {best.step_s:.3g} s per step ({lo:.3g}-{hi:.3g} s over the efficiency band; "
             f"{terms}); {best.memory_bytes / 1e9:,.1f} GB per chip; {best.tokens_per_second:,.0f} tokens/s; "
             f"MFU {best.mfu:.0%}."]
    if len(result.ranked) > 1:
        other = next((x for x in result.ranked[1:] if (x.dp, x.tp, x.pp) != (best.dp, best.tp, best.pp)),
                     result.ranked[1])
        worst = max(best.breakdown, key=lambda k: other.breakdown[k] - best.breakdown[k])
        lines.append(f"Next other split: {other.label}: {other.step_s:.3g} s, mostly because its {worst} "
                     f"is {other.breakdown[worst]:.3g} s against {best.breakdown[worst]:.3g} s.")
    if result.too_big:
        lines.append(f"{len(result.too_big)} layout(s) were dropped for memory, e.g. {result.too_big[-1].label} "
                     f"needs {result.too_big[-1].memory_bytes / 1e9:,.1f} GB per chip.")
    return lines


def pinned(cfg: PlanConfig, *, dp: int, tp: int, pp: int, cp: int = 1, ep: int = 1, zero: int = 1,
           virtual_stages: int = 1, recompute: str = "none", micro_batch: int = 1) -> Layout:
    """Evaluate one fully pinned layout (e.g. a published run); degrees must fill the cluster."""
    dims = ParallelDims(dp=dp, tp=tp, pp=pp, cp=cp, ep=ep, zero=zero, virtual_stages=virtual_stages,
                        world_size=cfg.cluster.devices)
    return evaluate(replace(cfg, micro_batch=micro_batch), dims, recompute=recompute, micro_batch=micro_batch)


def tp_roofline_check(model: ModelShape | str = "llama-3-70b", tp: int = 8, *, chip: str = "H100 SXM",
                  chips_per_node: int = 8, seq: int = 4096) -> dict:
    """The tensor-parallel condition beside the planner's own TP-communication / matmul-compute ratio.

    The closed form assumes peak FLOP/s and full line rate; the planner uses the achieved matmul fraction and
    bus fraction, so its ratio is the closed form's times (bus fraction / matmul fraction) up to the
    non-matmul work; the two must agree on which side of 1 the layout falls.
    """
    from aihw.comm.roofline import tp_condition

    inside = Cluster(chip=chip, chips_per_node=chips_per_node, nodes=max(1, tp // chips_per_node))
    across = Cluster(chip=chip, chips_per_node=1, nodes=tp)
    out = {}
    for where, cluster, link in (("inside a node", inside, "chip"), ("across nodes", across, "InfiniBand NDR")):
        cfg = PlanConfig(model=model, cluster=cluster, global_batch=1, seq=seq, micro_batch=1,
                         sequence_parallel=False)
        x = evaluate(cfg, ParallelDims(dp=1, tp=tp, pp=1), recompute="none")
        closed = tp_condition(model, tp, chip, link)
        out[where] = {"closed_form_ratio": closed.ratio,
                      "planner_compute_over_tp_comm": x.breakdown["compute"] / x.breakdown["tp_comm"],
                      "closed_form_bound": closed.bound,
                      "planner_bound": "compute" if x.breakdown["compute"] >= x.breakdown["tp_comm"]
                      else "communication"}
    return out
