"""What a plan is asked and what it answers: the cluster (:class:`Cluster`), the question (:class:`PlanConfig`:
model, batch, precision, which layouts to consider, pinned degrees) and one candidate layout's result
(:class:`Layout`). Each is validated on creation; :func:`check_pins` checks pinned degrees against the model and
the cluster, naming what would work.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Literal, get_args

from aihw._validate import require_bool, require_choice, require_in_range, require_positive
from aihw.catalogue.hardware import Chip, get_chip
from aihw.catalogue.networks import get_network
from aihw.comm import collectives as cc
from aihw.formats.precision import TRAINING_PRECISIONS, resolve_precision
from aihw.layout.dims import ParallelDims, divisors
from aihw.planning.efficiency import Efficiency
from aihw.transformer.flops import Recompute
from aihw.transformer.shapes import ModelShape, resolve_model

RECOMPUTE: tuple[Recompute, ...] = get_args(Recompute)
Attention = Literal["fused", "eager"]  # FlashAttention-style kernels (no s x s scores stored) or eager scores
ATTENTION: tuple[Attention, ...] = get_args(Attention)
Elementwise = Literal["fused", "eager"]  # Megatron-style fused kernels, or eager PyTorch ops one by one
ELEMENTWISE: tuple[Elementwise, ...] = get_args(Elementwise)
MAX_DEVICES = 1 << 22  # 4M chips: beyond any cluster built; bounds the search


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
    chip_spec: Chip = field(init=False, repr=False, compare=False)  # the catalogue entry, looked up once
    _links: tuple[cc.LinkModel | None, cc.LinkModel] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        require_positive("chips_per_node", self.chips_per_node, integer=True)
        require_positive("nodes", self.nodes, integer=True)
        if self.chips_per_node * self.nodes > MAX_DEVICES:
            raise ValueError(f"nodes x chips_per_node = {self.nodes} x {self.chips_per_node} = "
                             f"{self.nodes * self.chips_per_node:,} chips; the planner handles at most "
                             f"{MAX_DEVICES:,}")
        chip = get_chip(self.chip)
        object.__setattr__(self, "chip", chip.name)
        object.__setattr__(self, "chip_spec", chip)
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
        intra = cc.link_from_chip(chip, alpha_s=self.intra_alpha_s) if chip.interconnect is not None else None
        object.__setattr__(self, "_links", (intra,
                                            cc.network_link(network.name, alpha_s=self.inter_alpha_s)))

    def __reduce__(self) -> tuple:  # pickles and copies rebuild from the fields given (the chip entry is not picklable)
        return (Cluster, tuple(getattr(self, f.name) for f in fields(self) if f.init))

    @property
    def devices(self) -> int:
        return self.chips_per_node * self.nodes

    def intra_link(self) -> cc.LinkModel:
        """The chip's scale-up link inside a node (the catalogue's interconnect, per direction)."""
        if self._links[0] is None:
            raise ValueError(f"{self.chip} has no interconnect figure in the catalogue")
        return self._links[0]

    def inter_link(self) -> cc.LinkModel:
        """The network port each chip has to other nodes."""
        return self._links[1]


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
        object.__setattr__(self, "precision", resolve_precision(self.precision, TRAINING_PRECISIONS))
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
        self.cluster.chip_spec.peak_flops(self.precision)  # raises if the chip has no such mode
        check_pins(self)

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
                    "per_device_bytes": self.memory_bytes}
        return {"dp": d.dp, "tp": d.tp, "pp": d.pp, "cp": d.cp, "ep": d.ep, "zero": d.zero,
                "virtual_stages": d.virtual_stages, "recompute": self.recompute, "micro_batch": self.micro_batch,
                "micro_batches": self.micro_batches, "stage_layers": list(self.stages), "fits": self.fits,
                "per_device_bytes": self.memory_bytes, "step_seconds": self.step_s,
                "step_seconds_band": list(self.band_s), "tokens_per_second": self.tokens_per_second,
                "model_tflops_per_device": self.model_tflops_per_device,
                "executed_tflops_per_device": self.executed_tflops_per_device, "mfu": self.mfu,
                "breakdown": dict(self.breakdown)}


def check_pins(cfg: PlanConfig) -> None:
    """Pinned degrees must suit the model and the cluster; ValueError naming the value and what would do."""
    for name in ("tp", "pp", "dp", "cp", "ep", "virtual_stages", "micro_batches"):
        if getattr(cfg, name) is not None:
            require_positive("micro_batches (m)" if name == "micro_batches" else name, getattr(cfg, name),
                             integer=True)
    dims = ParallelDims(dp=cfg.dp or 1, tp=cfg.tp or 1, pp=cfg.pp or 1, cp=cfg.cp or 1, ep=1,
                        virtual_stages=cfg.virtual_stages or 1 if cfg.pp not in (None, 1) else 1)
    dims.validate_model(cfg.shape, seq=cfg.tokens)
    _check_ep_pin(cfg)
    _check_tp_pin(cfg)
    _check_product_of_pins(cfg)
    _check_batch_pins(cfg)


def _check_ep_pin(cfg: PlanConfig) -> None:
    mdl = cfg.shape
    if cfg.ep is None:
        return
    if cfg.ep > 1 and not mdl.is_moe:
        raise ValueError(f"ep={cfg.ep} needs a mixture-of-experts model; {mdl.name} is dense (experts = 0)")
    if mdl.is_moe and mdl.experts % cfg.ep:
        raise ValueError(f"ep={cfg.ep} must divide the {mdl.experts} experts of {mdl.name}; "
                         f"possible: {divisors(mdl.experts)}")


def _check_tp_pin(cfg: PlanConfig) -> None:
    mdl, cpn = cfg.shape, cfg.cluster.chips_per_node
    if cfg.tp is not None and cpn % cfg.tp and cfg.tp % cpn:
        possible = [d for d in divisors(math.gcd(mdl.heads, mdl.hidden)) if cpn % d == 0 or d % cpn == 0]
        raise ValueError(f"tp={cfg.tp} cannot fill nodes of {cpn} chips: a tensor-parallel group must fit a "
                         f"node evenly or span whole nodes; possible: {possible}")


def _check_product_of_pins(cfg: PlanConfig) -> None:
    """The pinned degrees' product must divide the cluster's chips (and equal it when all four are pinned)."""
    n = cfg.cluster.devices
    pinned = {k: getattr(cfg, k) for k in ("dp", "tp", "pp", "cp") if getattr(cfg, k) is not None}
    product = math.prod(pinned.values()) if pinned else 1
    if n % product == 0 and (len(pinned) < 4 or product == n):
        return
    verdict = "does not divide" if n % product else "is not"
    if len(pinned) == 1:
        (name, value), = pinned.items()
        raise ValueError(f"{name}={value}, which {verdict} the cluster's {n} chips")
    names = " x ".join(pinned)
    values = " x ".join(str(v) for v in pinned.values())
    raise ValueError(f"{names} = {values} = {product}, which {verdict} the cluster's {n} chips")


def _check_batch_pins(cfg: PlanConfig) -> None:
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
