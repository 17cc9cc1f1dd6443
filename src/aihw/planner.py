"""Pick a parallel layout for training a transformer on a cluster: DP x TP x PP x ZeRO x recomputation.

For every layout that uses all the chips, the planner (stdlib only, built on the course's calculators)

1. sizes one device with :mod:`aihw.memory` and drops the layout if it exceeds ``memory_fraction`` of the
   chip's memory;
2. estimates the step time as compute + pipeline bubble + communication, each term kept apart:

   * compute: executed FLOPs / (devices x dense peak x ``mfu``). FLOPs per token: ``6 N`` for the matrices
     (Kaplan et al. 2020) plus ``12 L s h`` for attention scores (Narayanan et al. 2021), plus one more
     forward for full recomputation, or the attention core's forward for selective recomputation;
   * bubble: (p - 1) / m of the compute time, the 1F1B bubble relative to ideal compute
     (:func:`aihw.pipeline_sim.bubble_fraction`);
   * tensor parallel: 4 all-reduces of ``b s h`` activations per layer and micro-batch (6 with full
     recomputation), alpha-beta ring time (:mod:`aihw.collective_cost`);
   * pipeline: one activation forward and one gradient back per micro-batch and stage;
   * data parallel: the gradient all-reduce (ZeRO 1-2: reduce-scatter + all-gather, same volume; ZeRO-3 adds
     the parameter all-gathers, 1.5x), hierarchical when the group spans nodes;
3. ranks the layouts by step time and says why the winner wins.

Ranks are laid out tensor-parallel fastest, then pipeline, then data parallel, so a TP group stays inside a
node when ``tp`` divides the chips per node. No communication is overlapped with compute: an upper bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from aihw import collective_cost as cc
from aihw._validate import require_in_range, require_positive
from aihw.catalogue.hardware import get_chip
from aihw.catalogue.networks import get_network
from aihw.memory import PRECISION_BYTES, MemoryConfig, estimate
from aihw.model_presets import ModelShape, resolve_model
from aihw.pipeline_sim import bubble_fraction

RECOMPUTE = ("none", "selective", "full")


@dataclass(frozen=True)
class Cluster:
    """Identical nodes of ``chips_per_node`` catalogue chips joined by one ``network`` port per chip."""

    chip: str = "H100 SXM"  # catalogue name; its interconnect (NVLink, ICI, ...) links chips inside a node
    chips_per_node: int = 8
    nodes: int = 4
    network: str = "InfiniBand NDR"  # inter-node port per chip, from data/networks.toml
    intra_alpha_s: float = cc.DEFAULT_CHIP_ALPHA_S  # assumed start-up latency per message, seconds
    inter_alpha_s: float = cc.DEFAULT_NETWORK_ALPHA_S

    def __post_init__(self) -> None:
        require_positive("chips_per_node", self.chips_per_node, integer=True)
        require_positive("nodes", self.nodes, integer=True)
        object.__setattr__(self, "chip", get_chip(self.chip).name)
        object.__setattr__(self, "network", get_network(self.network).name)
        require_in_range("intra_alpha_s", self.intra_alpha_s, 0, 1)
        require_in_range("inter_alpha_s", self.inter_alpha_s, 0, 1)

    @property
    def devices(self) -> int:
        return self.chips_per_node * self.nodes

    def intra_link(self) -> cc.LinkModel:
        return cc.link_from_chip(self.chip, alpha_s=self.intra_alpha_s)

    def inter_link(self) -> cc.LinkModel:
        return cc.network_link(self.network, alpha_s=self.inter_alpha_s)


@dataclass(frozen=True)
class PlanConfig:
    """What to train, on what, and which layouts to consider."""

    model: ModelShape | str = "llama-2-13b"  # a memory-chapter preset or a ModelShape
    cluster: Cluster = Cluster()
    global_batch: int = 512  # sequences per optimizer step
    seq: int | None = None  # tokens per sequence; None: the model's context length
    micro_batch: int = 1  # sequences per micro-batch
    mfu: float = 0.4  # fraction of dense peak FLOP/s every executed FLOP runs at, in (0, 1]
    precision: str = "bf16"  # weights and activations (see aihw.memory)
    optimizer: str = "adamw"
    zero_stages: tuple[int, ...] = (0, 1, 2, 3)
    recompute: tuple[str, ...] = RECOMPUTE
    memory_fraction: float = 0.9  # usable share of each chip's memory (the rest: framework, fragmentation)
    tp: int | None = None  # pin the tensor-parallel degree (None: every one that fits the model and nodes)
    pp: int | None = None  # pin the pipeline stages (None: every divisor of the layers)
    micro_batches: int | None = None  # pin m, micro-batches per pipeline and step (None: whatever dp gives)

    def __post_init__(self) -> None:
        if isinstance(self.model, str):
            object.__setattr__(self, "model", resolve_model(self.model))
        _check_pins(self)
        require_positive("global_batch", self.global_batch, integer=True)
        require_positive("micro_batch", self.micro_batch, integer=True)
        if self.seq is not None:
            require_positive("seq", self.seq, integer=True)
        require_in_range("mfu", self.mfu, 0, 1, low_inclusive=False)
        require_in_range("memory_fraction", self.memory_fraction, 0, 1, low_inclusive=False)
        if self.precision not in PRECISION_BYTES or PRECISION_BYTES[self.precision] < 2:
            raise ValueError(f"precision {self.precision!r}: the planner trains in fp32, tf32, bf16 or fp16")
        if not self.zero_stages or any(z not in (0, 1, 2, 3) for z in self.zero_stages):
            raise ValueError(f"zero_stages must be a non-empty subset of (0, 1, 2, 3), got {self.zero_stages!r}")
        if not self.recompute or any(r not in RECOMPUTE for r in self.recompute):
            raise ValueError(f"recompute must be a non-empty subset of {RECOMPUTE}, got {self.recompute!r}")
        get_chip(self.cluster.chip).peak_flops(self.precision)  # raises if the chip has no such mode

    @property
    def tokens(self) -> int:
        return self.seq or self.model.max_seq


@dataclass(frozen=True)
class Layout:
    """One candidate: degrees, per-device memory (bytes) and the step-time terms (seconds)."""

    dp: int
    tp: int
    pp: int
    zero: int
    recompute: str
    micro_batches: int  # m per pipeline per step
    memory_bytes: float
    fits: bool
    times: dict = field(default_factory=dict)  # compute, bubble, tp_comm, pp_comm, dp_comm (seconds)
    mfu_achieved: float = 0.0  # model FLOPs (no recomputation) / (step x devices x peak)

    @property
    def step_s(self) -> float:
        return sum(self.times.values())

    @property
    def label(self) -> str:
        return f"DP{self.dp} x TP{self.tp} x PP{self.pp}, ZeRO-{self.zero}, recompute {self.recompute}"


def flops_per_token(m: ModelShape, seq: int, recompute: str = "none") -> tuple[float, float]:
    """(model FLOPs, executed FLOPs) per trained token: forward + backward (+ recomputed forward)."""
    matrices = m.layers * m.layer_params() + m.vocab * m.hidden  # the output projection is a matmul too
    attention = 4 * m.layers * seq * m.hidden  # QK^T and AV, forward, per token
    model = 6 * matrices + 3 * attention
    extra = {"none": 0.0, "selective": attention, "full": 2 * m.layers * m.layer_params() + attention}
    return model, model + extra[recompute]


def _ring(n_bytes: float, ranks: int, *, group_stride: int, cluster: Cluster) -> float:
    """All-reduce time of a group of ``ranks`` whose members are ``group_stride`` ranks apart."""
    if ranks == 1 or n_bytes <= 0:
        return 0.0
    per_node = max(1, cluster.chips_per_node // group_stride)  # group members inside one node
    if per_node >= ranks:
        return cc.all_reduce_time(n_bytes, ranks, link=cluster.intra_link())
    return cc.hierarchical_all_reduce_time(n_bytes, gpus_per_node=per_node, nodes=ranks // per_node,
                                           intra=cluster.intra_link(), inter=cluster.inter_link())


def _times(cfg: PlanConfig, dp: int, tp: int, pp: int, zero: int, recompute: str, m: int) -> tuple[dict, float]:
    model, cl, s, b = cfg.model, cfg.cluster, cfg.tokens, cfg.micro_batch
    chip = get_chip(cl.chip)
    peak = chip.peak_flops(cfg.precision)
    model_flops, executed = flops_per_token(model, s, recompute)
    tokens = cfg.global_batch * s
    compute = executed * tokens / (cl.devices * peak * cfg.mfu)
    act_bytes = 4 if PRECISION_BYTES[cfg.precision] == 4 else 2
    payload = b * s * model.hidden * act_bytes
    per_layer = 6 if recompute == "full" else 4
    tp_comm = per_layer * (model.layers // pp) * m * _ring(payload, tp, group_stride=1, cluster=cl)
    pp_link = cl.intra_link() if tp * pp <= cl.chips_per_node else cl.inter_link()
    pp_comm = 2 * m * cc.send_recv_time(payload, link=pp_link) if pp > 1 else 0.0
    grad_bytes = max(PRECISION_BYTES[cfg.precision], 2) * model.param_count() / (tp * pp)
    dp_comm = (1.5 if zero == 3 else 1.0) * _ring(grad_bytes, dp, group_stride=tp * pp, cluster=cl)
    times = {"compute": compute, "bubble": compute * bubble_fraction(pp, m, convention="of_ideal"),
             "tp_comm": tp_comm, "pp_comm": pp_comm, "dp_comm": dp_comm}
    return times, model_flops * tokens / (sum(times.values()) * cl.devices * peak)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _check_pins(cfg: PlanConfig) -> None:
    """Pinned degrees must suit the model and the cluster; ValueError naming the value and what would do."""
    m, n = cfg.model, cfg.cluster.devices
    for name in ("tp", "pp", "micro_batches"):
        if getattr(cfg, name) is not None:
            require_positive("micro_batches (m)" if name == "micro_batches" else name, getattr(cfg, name), integer=True)
    if cfg.tp is not None and (m.heads % cfg.tp or m.hidden % cfg.tp):
        raise ValueError(f"tp={cfg.tp} must divide the {m.heads} attention heads and the hidden size {m.hidden} "
                         f"of {m.name}; possible: {_divisors(math.gcd(m.heads, m.hidden))}")
    if cfg.pp is not None and m.layers % cfg.pp:
        raise ValueError(f"pp={cfg.pp} stages must divide the {m.layers} layers of {m.name}; "
                         f"possible: {_divisors(m.layers)}")
    pinned = (cfg.tp or 1) * (cfg.pp or 1)
    if n % pinned:
        raise ValueError(f"tp x pp = {pinned} must divide the cluster's {n} chips")


def _degrees(cfg: PlanConfig) -> list[tuple[int, int, int]]:
    n, cpn, m = cfg.cluster.devices, cfg.cluster.chips_per_node, cfg.model
    out = []
    for tp in (d for d in range(1, n + 1) if n % d == 0 and m.heads % d == 0 and cfg.tp in (None, d)):
        if cpn % tp and tp % cpn:  # a TP group must tile nodes exactly
            continue
        for pp in (d for d in range(1, n // tp + 1) if (n // tp) % d == 0 and m.layers % d == 0
                   and cfg.pp in (None, d)):
            out.append((n // (tp * pp), tp, pp))
    return out


def enumerate_layouts(cfg: PlanConfig) -> tuple[list[Layout], list[tuple[str, str]]]:
    """Every layout: (candidates with memory and times, rejected (label, reason) for a bad batch split)."""
    layouts, rejected = [], []
    capacity = cfg.memory_fraction * get_chip(cfg.cluster.chip).memory_bytes
    for dp, tp, pp in _degrees(cfg):
        if cfg.global_batch % (dp * cfg.micro_batch):
            rejected.append((f"DP{dp} x TP{tp} x PP{pp}", f"global_batch {cfg.global_batch} is not a multiple "
                             f"of dp x micro_batch = {dp * cfg.micro_batch}"))
            continue
        m = cfg.global_batch // (dp * cfg.micro_batch)
        if cfg.micro_batches not in (None, m):
            rejected.append((f"DP{dp} x TP{tp} x PP{pp}", f"m = global_batch / (dp x micro_batch) = {m}, "
                             f"not the requested {cfg.micro_batches}"))
            continue
        for zero in (z for z in cfg.zero_stages if dp > 1 or z == min(cfg.zero_stages)):
            for recompute in cfg.recompute:
                mem = estimate(MemoryConfig(model=cfg.model, precision=cfg.precision, optimizer=cfg.optimizer,
                                            batch=cfg.micro_batch, seq=cfg.tokens, recompute=recompute,
                                            zero=zero, dp=dp, tp=tp, pp=pp)).per_device_bytes
                times, mfu = _times(cfg, dp, tp, pp, zero, recompute, m)
                layouts.append(Layout(dp, tp, pp, zero, recompute, m, mem, mem <= capacity, times, mfu))
    return layouts, rejected


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
        def row(x: Layout) -> dict:
            return {"dp": x.dp, "tp": x.tp, "pp": x.pp, "zero": x.zero, "recompute": x.recompute,
                    "micro_batches": x.micro_batches, "memory_bytes": x.memory_bytes, "step_s": x.step_s,
                    "times_s": dict(x.times), "mfu_achieved": x.mfu_achieved}
        cl = self.config.cluster
        return {"model": self.config.model.name, "cluster": {"chip": cl.chip, "chips_per_node": cl.chips_per_node,
                                                             "nodes": cl.nodes, "network": cl.network},
                "global_batch": self.config.global_batch, "seq": self.config.tokens, "mfu": self.config.mfu,
                "ranked": [row(x) for x in self.ranked[:top]], "fitting": len(self.ranked),
                "too_big": len(self.too_big), "rejected": [list(r) for r in self.rejected],
                "why": explain(self), "assumptions": list(self.assumptions)}


def _assumptions(cfg: PlanConfig) -> tuple[str, ...]:
    cl, chip = cfg.cluster, get_chip(cfg.cluster.chip)
    intra, inter = cl.intra_link(), cl.inter_link()
    return (
        f"{cl.nodes} node(s) x {cl.chips_per_node} {chip.name}: dense {cfg.precision} peak "
        f"{chip.peak_flops(cfg.precision) / 1e12:,.0f} TFLOP/s, memory {chip.memory_bytes / 1e9:,.0f} GB "
        f"({cfg.memory_fraction:.0%} usable).",
        f"Compute at MFU {cfg.mfu:.0%} of peak for every executed FLOP (recomputation included).",
        f"Inside a node: {intra.name}, {intra.bandwidth_bytes_per_s / 1e9:,.0f} GB/s per direction per chip, "
        f"alpha {intra.alpha_s * 1e6:g} us; between nodes: {inter.name}, "
        f"{inter.bandwidth_bytes_per_s / 1e9:,.0f} GB/s per direction per chip, alpha {inter.alpha_s * 1e6:g} us.",
        "Ring all-reduces (hierarchical across nodes); ranks ordered TP, then PP, then DP.",
        "1F1B pipeline, equal stages (embedding and head not balanced), bubble (p-1)/m of compute.",
        "No overlap of communication with compute: step time is an upper bound.",
        "Memory per device from aihw.memory (Korthikanti et al. 2022 activations, sequence parallelism, "
        "1F1B holding p micro-batches on the first stage).",
    )


def plan(cfg: PlanConfig) -> Plan:
    """Enumerate, drop what does not fit, rank by estimated step time."""
    layouts, rejected = enumerate_layouts(cfg)
    fits = sorted((x for x in layouts if x.fits), key=lambda x: (x.step_s, x.memory_bytes))
    too_big = tuple(sorted((x for x in layouts if not x.fits), key=lambda x: x.memory_bytes))
    return Plan(cfg, tuple(fits), too_big, tuple(rejected), _assumptions(cfg))


def explain(result: Plan) -> list[str]:
    """Sentences saying why the winner wins: its time terms, and what costs the runner-up more."""
    best = result.best
    if best is None:
        smallest = result.too_big[0] if result.too_big else None
        need = f"; the smallest needs {smallest.memory_bytes / 1e9:,.1f} GB per chip" if smallest else ""
        return [f"No layout fits in memory{need}: add chips or nodes, or use a bigger-memory chip."]
    terms = ", ".join(f"{k} {v:.3g} s" for k, v in best.times.items() if v > 0)
    lines = [f"Best: {best.label}: {best.step_s:.3g} s per step ({terms}); "
             f"{best.memory_bytes / 1e9:,.1f} GB per chip; achieved MFU {best.mfu_achieved:.0%}."]
    if len(result.ranked) > 1:
        other = next((x for x in result.ranked[1:] if (x.dp, x.tp, x.pp) != (best.dp, best.tp, best.pp)),
                     result.ranked[1])
        worst = max(best.times, key=lambda k: other.times[k] - best.times[k])
        lines.append(f"Next other split: {other.label}: {other.step_s:.3g} s, mostly because its {worst} "
                     f"is {other.times[worst]:.3g} s against {best.times[worst]:.3g} s.")
    if result.too_big:
        lines.append(f"{len(result.too_big)} layout(s) were dropped for memory, e.g. {result.too_big[-1].label} "
                     f"needs {result.too_big[-1].memory_bytes / 1e9:,.1f} GB per chip.")
    return lines
