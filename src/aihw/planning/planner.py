"""The layout search: every DP x TP x PP x CP x EP x ZeRO x recomputation that fills the cluster, sized by the
memory estimator and timed by the step model (:mod:`aihw.planning.step`), the fitting ones ranked by step time,
with why the winner wins (:func:`explain`) and the assumptions behind every number.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from aihw._validate import require_instance
from aihw.layout.dims import ParallelDims, divisors, tp_fits_kv_heads
from aihw.memory.estimator import MemoryConfig
from aihw.planning.config import RECOMPUTE, Cluster, Layout, PlanConfig
from aihw.planning.efficiency import (
    ATTENTION_TO_GEMM,
    BAND,
    DEFAULT_GEMM_FRACTION,
    GEMM_FRACTION,
    GEMM_SOURCE,
)
from aihw.planning.step import evaluate, evaluate_sized, memory_config, split_layout, with_band
from aihw.transformer.shapes import ModelShape

MAX_PP = 128
CP_CHOICES = (1, 2, 4, 8, 16, 32)
VIRTUAL_CHOICES = (1, 2, 4)
BAND_TOP = 20  # layouts whose uncertainty band is computed (the top of the ranking)



def _tp_choices(cfg: PlanConfig) -> list[int]:
    """Tensor-parallel degrees worth searching: they divide the heads, hidden and MLP widths, share a factor
    with the KV heads (:func:`aihw.layout.dims.tp_fits_kv_heads`) and fill nodes evenly."""
    if cfg.tp:
        return [cfg.tp]
    mdl, n, cpn = cfg.shape, cfg.cluster.devices, cfg.cluster.chips_per_node
    max_tp = cfg.max_tp or cpn
    return [d for d in divisors(math.gcd(mdl.heads, mdl.hidden))
            if d <= max_tp and cpn % d == 0 and n % d == 0 and mdl.ffn_dim % d == 0
            and tp_fits_kv_heads(mdl.n_kv_heads, d)]


def _cp_choices(cfg: PlanConfig) -> list[int]:
    """Context-parallel degrees: dividing the sequence, each rank keeping at least 2,048 tokens."""
    s = cfg.tokens
    return [cfg.cp] if cfg.cp else [c for c in CP_CHOICES if s % c == 0 and (c == 1 or s // c >= 2048)]


def _ep_choices(cfg: PlanConfig, dp: int, cp: int) -> list[int]:
    mdl = cfg.shape
    if cfg.ep:
        return [cfg.ep]
    if not mdl.is_moe:
        return [1]
    return [e for e in divisors(mdl.experts) if (dp * cp) % e == 0 and e <= cfg.cluster.chips_per_node]


def _virtual_choices(cfg: PlanConfig, pp: int, m: int) -> list[int]:
    if cfg.virtual_stages or pp == 1 or cfg.schedule == "gpipe":
        return [cfg.virtual_stages or 1]
    return [v for v in VIRTUAL_CHOICES if pp * v <= cfg.shape.layers and (v == 1 or m % pp == 0)]


def _splits(cfg: PlanConfig) -> Iterator[tuple[int, int, int, int]]:
    """(dp, tp, pp, cp) that fill the cluster, with the pinned degrees kept."""
    n = cfg.cluster.devices
    for tp in _tp_choices(cfg):
        for cp in _cp_choices(cfg):
            if n % (tp * cp):
                continue
            rest = n // (tp * cp)
            pps = [cfg.pp] if cfg.pp else [p for p in divisors(rest) if p <= min(MAX_PP, cfg.shape.layers)]
            for pp in pps:
                if rest % pp == 0 and cfg.dp in (None, rest // pp):
                    yield rest // pp, tp, pp, cp


def _candidates(cfg: PlanConfig) -> tuple[list[tuple], list[tuple[str, str]]]:
    """Degree combinations worth evaluating, and the rejected ones with their reason."""
    out, rejected = [], []
    for dp, tp, pp, cp in _splits(cfg):
        for b in [cfg.micro_batch] if cfg.micro_batch else [1, 2, 4]:
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
            for ep in _ep_choices(cfg, dp, cp):
                if (dp * cp) % ep:
                    rejected.append((label, f"ep={ep} does not divide dp x cp = {dp * cp}"))
                    continue
                out += [(dp, tp, pp, cp, ep, v, b) for v in _virtual_choices(cfg, pp, m)]
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
                "sequence_parallel": cfg.sequence_parallel, "layouts": layouts,
                "fitting": len(self.ranked),
                "too_big": len(self.too_big), "smallest_too_big": self.too_big[0].to_dict() if self.too_big else None,
                "rejected": [list(r) for r in self.rejected[:50]], "rejected_count": len(self.rejected),
                "why": explain(self), "assumptions": list(self.assumptions)}


def _assumptions(cfg: PlanConfig) -> tuple[str, ...]:
    cl, chip, eff = cfg.cluster, cfg.cluster.chip_spec, cfg.efficiency
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
    order = [r for r in RECOMPUTE if r in cfg.recompute]  # less recomputation is always faster
    work = len(combos) * len(cfg.zero_stages) * len(order)
    if work > MAX_SEARCH_LAYOUTS:
        raise ValueError(f"the search would size {work:,} layouts, more than the bound of {MAX_SEARCH_LAYOUTS:,} "
                         "(a few seconds); pin some degrees (tp, pp, dp, cp), the micro-batch or the ZeRO stage")
    layouts = _size_layouts(cfg, combos, order)
    fits = sorted((x for x in layouts if x.fits), key=lambda x: (x.step_s, x.memory_bytes))
    fits[:BAND_TOP] = [with_band(cfg, x) for x in fits[:BAND_TOP]]
    too_big = tuple(sorted((x for x in layouts if not x.fits), key=lambda x: x.memory_bytes))
    return Plan(given, tuple(fits), too_big, tuple(rejected), _assumptions(cfg))


def _size_layouts(cfg: PlanConfig, combos: list[tuple], order: Sequence[str]) -> list[Layout]:
    """Every combination at every ZeRO stage, with the least recomputation that fits (or all, if none fits)."""
    zeros = cfg.zero_stages
    layouts = []
    dims_of: dict[tuple, ParallelDims] = {}  # a split's dims (one per ZeRO stage), shared by its micro-batch sizes
    base_of: dict[tuple, MemoryConfig] = {}  # a split's memory configuration, validated once (MemoryConfig.varied)
    for dp, tp, pp, cp, ep, v, b in combos:
        searched = [z for z in zeros if dp > 1 or z == min(zeros)]
        for zero in searched:
            key = (dp, tp, pp, cp, ep, v, zero)
            dims = dims_of.get(key) or dims_of.setdefault(key, ParallelDims(dp=dp, tp=tp, pp=pp, cp=cp, ep=ep,
                                                                             zero=zero, virtual_stages=v))
            if zero == searched[0]:  # the layout's checks (the same for every ZeRO stage)
                m, stages = split_layout(cfg, dims, b)
                base = base_of.get(key[:6]) or base_of.setdefault(key[:6], memory_config(cfg, dims, order[0], b, m,
                                                                                         stages))
            for recompute in order:
                mem = base.varied(batch=b, micro_batches=m, zero=zero, recompute=recompute)
                x = evaluate_sized(cfg, dims, recompute, b, m, stages, mem, band=False, time_if_too_big=False)
                layouts.append(x)
                if x.fits:  # more recomputation would only be slower
                    break
    return layouts


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
                f"{result.config.memory_fraction * result.config.cluster.chip_spec.memory_bytes / 1e9:,.1f}"
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
