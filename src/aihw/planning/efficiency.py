"""The efficiency assumptions of the planner's step model, each with its source, and the one fitted constant.

Every number here is read from a published measurement (matmul benchmarks, FlashAttention's paper, nccl-tests
bus bandwidths) except :data:`STEP_OVERHEAD`, fitted once on Narayanan et al. 2021 Table 1
(:func:`aihw.planning.published.fit_overhead`), and the shares marked ASSUMED. :class:`Efficiency` gathers them
for one plan; :data:`BAND` is the pessimistic/optimistic range a plan's uncertainty band is computed over.
"""

from __future__ import annotations

from dataclasses import dataclass

from aihw._validate import require_in_range

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

# The one fitted constant: share of the step lost to what the model does not count (kernel launch gaps,
# optimizer step, data loading, synchronisation). Fitted once by least squares on log(predicted/published) over
# the 10 rows of Narayanan et al. 2021 Table 1 (aihw.planning.published.fit_overhead), then frozen here.
STEP_OVERHEAD = 0.11

# Uncertainty band: pessimistic / optimistic multipliers on the efficiency assumptions.
BAND = {"low": {"gemm": 0.92, "bus": 0.75, "overlap": False}, "high": {"gemm": 1.04, "bus": 1.1, "overlap": True}}


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
