"""How many bytes training and serving a decoder-only transformer need, component by component (numpy-free).

Every component is reported separately, in bytes (GB = 1e9 bytes, GiB = 2**30 bytes):

* ``weights``: parameters x bytes of the chosen precision (int4 = 0.5 byte; quantization scales not counted).
* ``gradients``: one per parameter, in the weight precision; 16-bit when weights are 8-bit or 4-bit.
* ``optimizer``: fp32 state per parameter: SGD 0, SGD+momentum 4, Adam/AdamW 8 (two moments); 8-bit Adam
  2 bytes plus one fp32 scale per 2048-value block (Dettmers et al. 2022).
* ``master_weights``: the fp32 copy mixed-precision training keeps when weights are below 32 bits
  (Micikevicius et al. 2018): 4 bytes per parameter.
* ``activations``: tensors saved for the backward pass, per layer after Korthikanti et al. 2022
  (arXiv:2205.05198), see :func:`activation_bytes_per_layer`; in inference, one layer's live working set
  (residual stream in and out plus the widest MLP intermediate, with fused attention that keeps no s x s
  score matrix), since nothing is kept for a backward pass.
* ``kv_cache``: 2 (K and V) x layers x kv_heads x head_dim x tokens x batch x bytes, where tokens is capped at
  the model's ``sliding_window`` when it has one (Mistral-7B keeps a rolling buffer of 4,096 positions).
* ``overhead``: framework overhead and temporary buffers, only if asked for (``overhead_fraction``,
  ``overhead_bytes``), always labelled as such.

``total`` is what one device would need holding everything; ``per_device`` applies tensor (``tp``), pipeline
(``pp``) and ZeRO data (``dp`` + ``zero``) parallelism (Rajbhandari et al. 2020).
"""

from __future__ import annotations

import functools
import math
import operator
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal, get_args

from aihw._validate import (
    NonFiniteResult,
    coerce_numbers,
    require_choice,
    require_finite_result,
    require_in_range,
    require_instance,
    require_positive,
    require_positive_int,
)
from aihw.formats.precision import (
    WEIGHT_PRECISIONS,
    activation_bytes_per_value,
    get_format,
    resolve_precision,
)
from aihw.layout.dims import kv_heads_per_device
from aihw.layout.schedules import interleaved_in_flight_factor, peak_in_flight
from aihw.transformer.flops import RECOMPUTE_CHOICES
from aihw.transformer.shapes import ModelShape, resolve_model

# The weight precisions the estimator offers (aihw.formats.precision.WEIGHT_PRECISIONS) and their storage bytes
# per value from the registry of number formats (tf32 is a tensor-core input mode: values are stored as 32-bit).
PRECISION_BYTES: dict[str, float] = {name: get_format(name).bytes for name in WEIGHT_PRECISIONS}
# Optimizer state in bytes per parameter (fp32 states). 8-bit Adam: two int8 moments + fp32 absmax per block.
ADAM8BIT_BLOCK = 2048
Optimizer = Literal["sgd", "sgd_momentum", "adam", "adamw", "adam8bit"]
OPTIMIZERS: tuple[str, ...] = get_args(Optimizer)
OPTIMIZER_STATE_BYTES: dict[str, float] = dict(zip(OPTIMIZERS, (0, 4, 8, 8, 2 + 2 * 4 / ADAM8BIT_BLOCK), strict=True))
COMPONENTS = ("weights", "gradients", "optimizer", "master_weights", "activations", "kv_cache", "overhead")
Mode = Literal["train", "infer"]
MODES: tuple[str, ...] = get_args(Mode)
RECOMPUTE = RECOMPUTE_CHOICES
Attention = Literal["eager", "fused"]
ATTENTION: tuple[str, ...] = get_args(Attention)
GradPrecision = Literal["param", "fp32"]
GRAD_PRECISIONS: tuple[str, ...] = get_args(GradPrecision)
ZeroStage = Literal[0, 1, 2, 3]
ZERO_STAGES: tuple[ZeroStage, ...] = get_args(ZeroStage)
ZERO3_BUFFER_LAYERS = 2  # layers' parameters a ZeRO-3 device holds gathered at once (current + prefetched)
GB, GiB = 1e9, 2**30


def activation_bytes_per_layer(*, seq: int, batch: int, hidden: int, heads: int, kv_dim: int | None = None,
                               mlp_saved_width: float | None = None, bytes_per_value: float = 2,
                               dropout: bool = True, recompute: str = "none", tp: int = 1,
                               sequence_parallel: bool = True) -> float:
    """Bytes one transformer layer saves for backward, counted as in Korthikanti et al. 2022, Sec. 4.

    Defaults reproduce the paper: ``s*b*h*(34 + 5*a*s/h)`` for 16-bit values with 1-byte dropout masks.
    Per layer the paper keeps: both LayerNorm inputs, the QKV input, Q and K, V, the softmax output, the
    attention-dropout mask and output, the output-projection input, the MLP input, the GELU input and the
    second linear's input (each 4h wide), and two dropout masks. ``kv_dim`` (GQA) and ``mlp_saved_width``
    (values the MLP saves beyond its input, 8h for a 4h GELU MLP) generalise it; selective recomputation
    drops the s^2 attention terms, full recomputation keeps only the layer input. With ``tp`` > 1 the
    sequence-parallel variant divides everything by tp; without it the norms, QKV/MLP inputs and masks are
    replicated.
    """
    require_choice("recompute", recompute, RECOMPUTE)
    s, b, h, a = (float(require_positive(name, v, integer=True)) for name, v in  # floats: overflow gives inf
                  (("seq", seq), ("batch", batch), ("hidden", hidden), ("heads", heads)))
    tp = require_positive_int("tp", tp)
    kv = h if kv_dim is None else require_positive_int("kv_dim", kv_dim)
    mlp = 8 * h if mlp_saved_width is None else mlp_saved_width
    mask = 1 if dropout else 0
    if recompute == "full":
        return bytes_per_value * s * b * h / (tp if sequence_parallel else 1)
    # values wide h: LN1 in, QKV in, Q, out-proj in, LN2 in, MLP in; plus K and V (kv each) and MLP internals
    split = bytes_per_value * s * b * (h + kv + kv + h + mlp)  # Q, K, V, out-proj input, MLP internals
    replicated = bytes_per_value * s * b * 4 * h + mask * 2 * s * b * h  # LN1, LN2, QKV, MLP inputs; 2 masks
    attention = 0.0 if recompute == "selective" else a * s * s * b * (bytes_per_value * (2 if mask else 1) + mask)
    if sequence_parallel or tp == 1:
        return (split + replicated + attention) / tp
    return split / tp + replicated + attention / tp


# The same function memoized, for _activations: a layout search asks for the same few (seq, batch, tp) many times,
# always with plain numbers (MemoryConfig coerces them), and the checks above are most of its cost.
_activation_bytes_per_layer = functools.lru_cache(maxsize=4096)(activation_bytes_per_layer)


def korthikanti_per_layer(*, seq: int, batch: int, hidden: int, heads: int, recompute: str = "none") -> float:
    """The paper's closed forms (16-bit, dropout, tp=1): sbh(34 + 5as/h), sbh*34, 2sbh."""
    s, b, h, a = (float(require_positive(name, v, integer=True)) for name, v in  # floats: overflow gives inf
                  (("seq", seq), ("batch", batch), ("hidden", hidden), ("heads", heads)))
    return {"none": s * b * h * (34 + 5 * a * s / h), "selective": 34 * s * b * h, "full": 2 * s * b * h}[
        require_choice("recompute", recompute, RECOMPUTE)]


@dataclass(frozen=True)
class MemoryConfig:
    """One sizing question: which model, which precision, training or serving, and how it is split."""

    model: ModelShape | None = None  # architecture; None with ``params`` sizes model state only
    params: float | None = None  # parameter count when no architecture is given (e.g. 7e9)
    precision: str = "bf16"  # weight precision (see PRECISION_BYTES)
    mode: str = "train"  # "train" or "infer"
    optimizer: str = "adamw"  # see OPTIMIZER_STATE_BYTES; ignored in inference
    master_weights: bool | None = None  # fp32 master copy; None: yes when training below 32 bits
    batch: int = 1  # micro-batch per data-parallel replica (training) or concurrent sequences (serving)
    seq: int | None = None  # tokens per sequence (serving: prompt + generated); None: the model's max_seq
    recompute: str = "none"  # activation recomputation: "none", "selective", "full"
    dropout: bool = False  # dropout masks saved (1 byte per value), as the paper assumes
    zero: int = 0  # ZeRO stage 0-3 over the dp replicas
    dp: int = 1  # data-parallel degree
    tp: int = 1  # tensor-parallel degree (must divide heads)
    pp: int = 1  # pipeline-parallel degree (must divide layers); 1F1B schedule assumed
    sequence_parallel: bool = True  # Megatron sequence parallelism alongside tp
    cp: int = 1  # context parallelism (ring attention): each device holds seq / cp tokens
    ep: int = 1  # expert parallelism (MoE models): each device holds experts / ep experts
    virtual_stages: int = 1  # interleaved 1F1B chunks per pipeline device (more activations in flight)
    micro_batches: int | None = None  # micro-batches per step (caps those in flight); None: at least pp
    schedule: str = "1f1b"  # pipeline schedule: "1f1b" (pp micro-batches in flight) or "gpipe" (all m of them)
    stage_layers: int | None = None  # layers on the busiest pipeline device; None: ceil(layers / pp)
    attention: str = "eager"  # "eager" keeps the s x s scores for backward; "fused" (FlashAttention) does not
    grad_precision: str = "param"  # "param": gradients in the weight precision (ZeRO paper, 16 B/param with
    #   bf16 + Adam); "fp32": fp32 gradients as Megatron-LM's distributed optimizer and DeepSpeed keep them
    #   (18 B/param with bf16 weights, 20 B with fp16: the fp16 gradient plus an fp32 main gradient)
    zero3_keep_gathered: bool = False  # ZeRO-3: keep the stage's parameters gathered across micro-batches
    kv_precision: str | None = None  # KV-cache precision; None: the activation precision
    overhead_fraction: float = 0.0  # framework overhead and temporaries, as a fraction of the rest
    overhead_bytes: float = 0.0  # fixed overhead per device (e.g. CUDA context), bytes

    def __post_init__(self) -> None:
        coerce_numbers(self, "params", "batch", "seq", "zero", "dp", "tp", "pp", "overhead_fraction",
                       "overhead_bytes")
        if (self.model is None) == (self.params is None):
            raise ValueError("give exactly one of model (a ModelShape or preset) and params (a count such as 7e9)")
        if isinstance(self.model, str):
            object.__setattr__(self, "model", resolve_model(self.model))
        if self.model is not None:
            require_instance("model", self.model, ModelShape)
        if self.params is not None:
            require_positive("params", self.params)
        object.__setattr__(self, "precision", resolve_precision(self.precision))
        require_choice("mode", self.mode, MODES)
        require_choice("optimizer", self.optimizer, OPTIMIZER_STATE_BYTES)
        require_choice("recompute", self.recompute, RECOMPUTE)
        if self.kv_precision is not None:
            object.__setattr__(self, "kv_precision", resolve_precision(self.kv_precision, what="kv_precision"))
        for name in ("batch", "dp", "tp", "pp", "cp", "ep", "virtual_stages"):
            require_positive(name, getattr(self, name), integer=True)
        require_choice("attention", self.attention, ATTENTION)
        require_choice("grad_precision", self.grad_precision, GRAD_PRECISIONS)
        require_choice("schedule", self.schedule, ("1f1b", "gpipe"))
        if self.schedule == "gpipe" and self.virtual_stages > 1:
            raise ValueError("virtual_stages > 1 is the interleaved 1F1B schedule; GPipe has one chunk per device")
        if self.micro_batches is not None:
            require_positive("micro_batches", self.micro_batches, integer=True)
        if self.stage_layers is not None:
            require_positive("stage_layers", self.stage_layers, integer=True)
        if self.seq is not None:
            require_positive("seq", self.seq, integer=True)
        if isinstance(self.zero, bool) or self.zero not in (0, 1, 2, 3):
            raise ValueError(f"zero stage must be 0, 1, 2 or 3, got {self.zero!r}")
        require_in_range("overhead_fraction", self.overhead_fraction, 0, 10)
        require_in_range("overhead_bytes", self.overhead_bytes, 0, math.inf, high_inclusive=False)
        if self.model is not None:
            self._check_parallel(self.model)
            if self.model.learned_positions and self.seq is not None and self.seq > self.model.max_seq:
                raise ValueError(f"seq={self.seq} is beyond the {self.model.max_seq} positions of {self.model.name} "
                                 "(a learned position table has no row for longer sequences)")

    def varied(self, *, batch: int, micro_batches: int | None, zero: int, recompute: str) -> MemoryConfig:
        """This configuration with the micro-batch size, the micro-batches per step, the ZeRO stage and the
        recomputation changed, each checked as ``__post_init__`` checks it.

        No other check involves these four (the layout rules read the degrees, not the ZeRO stage's value or
        the batch), so the other fields keep the validation they passed; a layout search sizes thousands of such
        variants of one split, and re-running every check for each would be most of its time.
        """
        if (self.batch, self.micro_batches, self.zero, self.recompute) == (batch, micro_batches, zero, recompute):
            return self
        require_positive("batch", batch, integer=True)
        if micro_batches is not None:
            require_positive("micro_batches", micro_batches, integer=True)
        if isinstance(zero, bool) or zero not in (0, 1, 2, 3):
            raise ValueError(f"zero stage must be 0, 1, 2 or 3, got {zero!r}")
        require_choice("recompute", recompute, RECOMPUTE)
        variant = object.__new__(MemoryConfig)
        variant.__dict__.update(self.__dict__, batch=batch, micro_batches=micro_batches, zero=zero,
                                recompute=recompute)
        return variant

    def _check_parallel(self, m: ModelShape) -> None:
        from aihw.layout.dims import ParallelDims

        ParallelDims(dp=self.dp, tp=self.tp, pp=self.pp, cp=self.cp, ep=self.ep, zero=self.zero,
                     virtual_stages=self.virtual_stages).validate_model(m, seq=self.tokens)

    @property
    def param_count(self) -> float:
        if self.model is not None:
            return float(self.model.param_count())
        assert self.params is not None  # __post_init__ requires exactly one of model and params
        return float(self.params)

    @property
    def tokens(self) -> int | None:
        if self.model is None:
            return self.seq
        return self.seq if self.seq is not None else self.model.max_seq

    @property
    def activation_bytes_per_value(self) -> float:
        """Activations stay 32-bit in fp32/tf32 runs and 16-bit otherwise (8/4-bit formats quantize weights)."""
        return activation_bytes_per_value(self.precision)


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes per component, for one device holding everything (``total``) and per device after splitting."""

    config: MemoryConfig
    total: dict[str, float]
    per_device: dict[str, float]
    assumptions: tuple[str, ...] = field(default=())

    @property
    def total_bytes(self) -> float:
        return sum(self.total.values())

    @property
    def per_device_bytes(self) -> float:
        return sum(self.per_device.values())

    @property
    def devices(self) -> int:
        return self.config.dp * self.config.tp * self.config.pp

    def to_dict(self) -> dict:
        """JSON-ready: total_bytes, per_device_bytes, breakdown, per_device_breakdown, assumptions, config."""
        cfg = asdict(self.config)
        cfg["model"] = self.config.model.name if self.config.model is not None else None
        cfg["params"] = self.config.param_count
        cfg["seq"] = self.config.tokens
        return {"total_bytes": self.total_bytes, "per_device_bytes": self.per_device_bytes,
                "devices": self.devices, "breakdown": dict(self.total),
                "per_device_breakdown": dict(self.per_device), "assumptions": list(self.assumptions),
                "config": cfg}


def _model_state(cfg: MemoryConfig) -> dict[str, float]:
    """Bytes per parameter for weights, gradients, optimizer and master copy (before any sharding).

    Gradients: in the weight precision (16-bit when weights are 8/4-bit), or fp32 with ``grad_precision="fp32"``
    (Megatron-LM keeps fp32 main gradients; with fp16 weights it also keeps the fp16 model gradient, and the
    fp32 copy is then sharded with the optimizer state: see :func:`grad_bytes_split`).
    """
    w = PRECISION_BYTES[cfg.precision]
    if cfg.mode == "infer":
        return {"weights": w, "gradients": 0.0, "optimizer": 0.0, "master_weights": 0.0}
    master = cfg.master_weights if cfg.master_weights is not None else w < 4
    model_grad, main_grad = grad_bytes_split(cfg)
    return {"weights": w, "gradients": model_grad + main_grad, "optimizer": OPTIMIZER_STATE_BYTES[cfg.optimizer],
            "master_weights": 4.0 if master else 0.0}


def grad_bytes_split(cfg: MemoryConfig) -> tuple[float, float]:
    """(model-gradient bytes, separate fp32 main-gradient bytes) per parameter.

    ZeRO-2 shards the model gradient; the separate fp32 main gradient (fp16 weights + ``grad_precision="fp32"``)
    lives with the optimizer and is sharded from ZeRO-1 on, as in Megatron-LM's distributed optimizer
    (bytes per parameter 4 + 16/d for fp16, 6 + 12/d for bf16 with fp32 gradients, 8 + 8/d for fp32).
    """
    w = PRECISION_BYTES[cfg.precision]
    if cfg.grad_precision == "param" or w >= 4:
        return max(w, 2.0) if cfg.grad_precision == "param" else 4.0, 0.0
    if cfg.precision == "fp16":
        return 2.0, 4.0
    return 4.0, 0.0  # bf16 (and 8/4-bit) weights: the fp32 gradient is the model gradient


def _busiest_layers(cfg: MemoryConfig) -> int:
    m = cfg.model
    if cfg.stage_layers is not None:
        return cfg.stage_layers
    assert m is not None, "the busiest stage's layer count needs an architecture"
    return -(-m.layers // cfg.pp)


def stage_params(cfg: MemoryConfig) -> float:
    """Parameters on the busiest device after tensor, pipeline and expert splitting."""
    m = cfg.model
    if m is None:
        return cfg.param_count / (cfg.tp * cfg.pp)
    per_layer = m.layer_params() - m.moe_params() + m.moe_params() / cfg.ep
    layers = _busiest_layers(cfg) * per_layer
    first, last = m.embedding_params(), m.head_params()
    if cfg.pp == 1:
        return (layers + first + last) / cfg.tp
    if m.tied_embeddings:  # the last stage keeps its own copy of the tied matrix (Megatron-LM)
        last += m.vocab * m.hidden
    return (layers + max(first, last)) / cfg.tp


def in_flight_layers(cfg: MemoryConfig) -> float:
    """Layers' worth of activations the first pipeline device holds at its peak (1F1B / interleaved).

    GPipe: all m micro-batches. 1F1B: the first stage holds min(pp, m) micro-batches of its layers; interleaving
    with v chunks holds
    (1 + (pp - 1) / (pp v)) times more (Narayanan et al. 2021, sec. 2.2.2).
    """
    layers = _busiest_layers(cfg)
    if cfg.pp == 1:
        return float(layers)
    # GPipe: all forwards before any backward, every micro-batch in flight; 1F1B: min(pp, m) on the first stage
    in_flight = peak_in_flight(cfg.schedule, cfg.pp, cfg.micro_batches or cfg.pp, stage=0)
    return layers * in_flight * interleaved_in_flight_factor(cfg.pp, cfg.virtual_stages)


def _activations(cfg: MemoryConfig, *, tp: int, split: bool = False) -> float:
    """Saved activations of the whole model (training) or one layer's live working set (inference), bytes."""
    m, b, tokens = cfg.model, cfg.batch, cfg.tokens
    assert m is not None and tokens is not None, "activations are estimated only with an architecture"
    s = tokens // (cfg.cp if split else 1)
    if cfg.mode == "infer":  # residual stream in and out + the widest MLP intermediate; fused attention
        widest = (2 if m.gated_mlp else 1) * m.ffn_dim
        return cfg.activation_bytes_per_value * s * b * (2 * m.hidden + widest) / tp + 4 * b * m.vocab
    per_value = (4 if m.gated_mlp else 2)  # GELU: its input + 2nd linear input; SwiGLU: gate, up, silu, down-in
    mlp = per_value * (m.top_k * m.expert_ffn_dim * m.capacity_factor if m.is_moe else m.ffn_dim)
    # fused attention (FlashAttention) keeps no s x s scores: the selective-recompute count without them
    recompute = "selective" if cfg.attention == "fused" and cfg.recompute == "none" else cfg.recompute
    per_layer = _activation_bytes_per_layer(
        seq=s, batch=b, hidden=m.hidden, heads=m.heads, kv_dim=m.kv_dim, mlp_saved_width=mlp,
        bytes_per_value=cfg.activation_bytes_per_value, dropout=cfg.dropout,
        recompute=recompute, tp=tp, sequence_parallel=cfg.sequence_parallel)
    head = (2 * cfg.activation_bytes_per_value * s * b * m.hidden + 4 * s * b * m.vocab) / tp  # norm, logits fp32
    if not split:
        return m.layers * per_layer + head
    # 1F1B: the first stage holds pp micro-batches of its layers (about all L layers' worth for even stages).
    return in_flight_layers(cfg) * per_layer + head


def kv_cache_bytes(model: ModelShape, *, tokens: int, batch: int, bytes_per_value: float, tp: int = 1,
                   layers: int | None = None) -> float:
    """Bytes of the KV cache one device holds: 2 (K and V) x layers x KV heads per device x head_dim x cached
    tokens x batch x bytes per value.

    The one owner of the KV-cache size (memory estimator, serving model, planner). Cached tokens are ``tokens``,
    or the window with sliding-window attention (a rolling buffer). KV heads per device follow
    :func:`aihw.layout.dims.kv_heads_per_device` (replicated when tp exceeds them). ``layers``: the layers on this
    device (default: all of the model's).
    """
    require_instance("model", model, ModelShape)
    for name, value in (("tokens", tokens), ("batch", batch)):
        require_positive(name, value, integer=True)
    require_positive("bytes_per_value", bytes_per_value)
    n_layers = model.layers if layers is None else require_positive("layers", layers, integer=True)
    cached = tokens if model.sliding_window is None else min(tokens, model.sliding_window)
    heads = kv_heads_per_device(model.n_kv_heads, tp)
    return 2.0 * n_layers * heads * model.head_dim * cached * batch * bytes_per_value


def _kv_cache(cfg: MemoryConfig, *, tp: int, pp: int) -> float:
    m, tokens = cfg.model, cfg.tokens
    assert m is not None and tokens is not None, "the KV cache is estimated only with an architecture"
    nbytes = PRECISION_BYTES[cfg.kv_precision] if cfg.kv_precision else cfg.activation_bytes_per_value
    return kv_cache_bytes(m, tokens=tokens, batch=cfg.batch, bytes_per_value=nbytes, tp=tp, layers=m.layers // pp)


def _components(cfg: MemoryConfig, *, split: bool) -> dict[str, float]:
    per_param = _model_state(cfg)
    params = stage_params(cfg) if split else cfg.param_count
    out = {k: v * params for k, v in per_param.items()}
    if split and cfg.mode == "train":
        z, n = cfg.zero, cfg.dp
        model_grad, main_grad = grad_bytes_split(cfg)
        out["optimizer"] /= n if z >= 1 else 1
        out["master_weights"] /= n if z >= 1 else 1
        out["gradients"] = params * (model_grad / (n if z >= 2 else 1) + main_grad / (n if z >= 1 else 1))
        if z >= 3 and not cfg.zero3_keep_gathered:
            # sharded weights plus the gather buffers of the layers being computed (current + prefetched)
            m = cfg.model
            buffer_params = (min(ZERO3_BUFFER_LAYERS, m.layers) * m.layer_params() / cfg.tp) if m else 0.0
            out["weights"] = out["weights"] / n + per_param["weights"] * buffer_params * (n > 1)
    tp, pp = (cfg.tp, cfg.pp) if split else (1, 1)
    has_arch = cfg.model is not None
    out["activations"] = _activations(cfg, tp=tp, split=split) if has_arch else 0.0
    out["kv_cache"] = _kv_cache(cfg, tp=tp, pp=pp) if has_arch and cfg.mode == "infer" else 0.0
    out["overhead"] = cfg.overhead_fraction * sum(out.values()) + cfg.overhead_bytes
    return out


def _assumptions(cfg: MemoryConfig) -> tuple[str, ...]:
    st = _model_state(cfg)
    notes = [f"{cfg.param_count:.4g} parameters"
             + (f" computed from the {cfg.model.name} architecture" if cfg.model else " as given") + ".",
             f"Weights in {cfg.precision}: {st['weights']:g} bytes per parameter; GB = 1e9 bytes, GiB = 2^30."]
    if cfg.mode == "train":
        total = sum(st.values())
        convention = ("the ZeRO paper's accounting (Rajbhandari et al. 2020): gradients in the weight precision"
                      if cfg.grad_precision == "param" else
                      "Megatron-LM's distributed-optimizer accounting: fp32 gradients")
        notes.append(f"Gradients {st['gradients']:g} B/param; {cfg.optimizer} state "
                     f"{st['optimizer']:g} B/param (fp32); fp32 master copy {st['master_weights']:g} B/param; "
                     f"{total:g} B/param in all, {convention}.")
    if cfg.model is None:
        notes.append("No architecture given: activations and KV cache are not estimated (0).")
    elif cfg.mode == "train":
        notes.append(f"Activations: Korthikanti et al. 2022 counting, {cfg.activation_bytes_per_value:g}-byte "
                     f"values, {'with' if cfg.dropout else 'no'} dropout masks, recompute={cfg.recompute}, "
                     f"batch {cfg.batch} x {cfg.tokens} tokens; logits kept in fp32.")
    else:
        notes.append(f"KV cache for {cfg.batch} sequence(s) of {cfg.tokens} tokens, "
                     f"{cfg.model.n_kv_heads} KV heads ({cfg.model.attention_kind}). Activations: one layer's "
                     "live set (residual in/out + widest MLP intermediate, fused attention keeping no "
                     "s x s scores) + last-token fp32 logits.")
    if cfg.dp * cfg.tp * cfg.pp > 1:
        notes.append(f"Per device: tp={cfg.tp}, pp={cfg.pp} (1F1B: the first stage holds pp micro-batches), "
                     f"dp={cfg.dp} with ZeRO stage {cfg.zero}.")
    notes += _odd_combinations(cfg)
    if cfg.overhead_fraction or cfg.overhead_bytes:
        notes.append(f"Overhead item: {cfg.overhead_fraction:.0%} of the rest + {cfg.overhead_bytes:.3g} bytes.")
    else:
        notes.append("No framework overhead, temporary buffers or fragmentation: a lower bound.")
    return tuple(notes)


def _odd_combinations(cfg: MemoryConfig) -> list[str]:
    """Flags for settings that are allowed but change nothing or leave the model's validated range."""
    flags = []
    if cfg.zero and cfg.mode == "infer":
        flags.append(f"Note: ZeRO stage {cfg.zero} is ignored when serving (ZeRO shards training state only).")
    elif cfg.zero and cfg.dp == 1:
        flags.append(f"Note: ZeRO stage {cfg.zero} with dp=1 shards nothing (it splits over dp replicas).")
    if cfg.model is not None and cfg.tokens is not None and cfg.tokens > cfg.model.max_seq:
        flags.append(f"Note: {cfg.tokens} tokens is beyond the {cfg.model.max_seq} the model was trained with "
                     "(possible with RoPE scaling; quality is not guaranteed).")
    return flags


def estimate(config: MemoryConfig) -> MemoryEstimate:
    require_instance("config", config, MemoryConfig)
    """Bytes per component for ``config``; see the module docstring for what each component counts.

    Raises NonFiniteResult (a ValueError) when the inputs are so large that a byte count overflows.
    """
    total, per_device = _checked_components(config)
    return MemoryEstimate(config, total, per_device, _assumptions(config))


def per_device_bytes(config: MemoryConfig) -> float:
    """``estimate(config).per_device_bytes`` (same checks, same number) without the assumption notes.

    For searches that size thousands of layouts (:mod:`aihw.planning.planner`): the single-device total, which is only
    checked here, is computed once for all the ways of splitting the same model and batch.
    """
    per_device = _components(config, split=True)
    if _finite(per_device) and _total_is_finite(_Unsplit(config)):
        return sum(per_device.values())
    return sum(_checked_components(config)[1].values())  # raises, naming the component that overflows


# What only says how a model is split over devices: the single-device total (``_components(cfg, split=False)``)
# never reads these fields (tests/test_memory.py checks it).
SPLIT_FIELDS = ("zero", "dp", "tp", "pp", "cp", "ep", "virtual_stages", "micro_batches", "schedule", "stage_layers",
                "sequence_parallel", "zero3_keep_gathered")


class _Unsplit:
    """A MemoryConfig compared and hashed on its fields outside SPLIT_FIELDS: one key per single-device total."""

    __slots__ = ("config", "key")

    def __init__(self, config: MemoryConfig) -> None:
        self.config = config
        self.key = _unsplit_fields(config)

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Unsplit) and self.key == other.key


@functools.lru_cache(maxsize=1024)
def _total_is_finite(unsplit: _Unsplit) -> bool:
    return _finite(_components(unsplit.config, split=False))


def _finite(components: dict[str, float]) -> bool:
    """Every value a finite number (a quick test; require_finite_result is the full one, naming the culprit)."""
    try:
        return all(map(math.isfinite, components.values()))
    except (OverflowError, TypeError):  # an integer beyond float range, or not a number
        return False


def _checked_components(config: MemoryConfig) -> tuple[dict[str, float], dict[str, float]]:
    try:
        total, per_device = _components(config, split=False), _components(config, split=True)
    except OverflowError:  # integer arithmetic beyond a float (batch x seq x vocab of 10**300)
        raise NonFiniteResult("memory estimate: a byte count is too large for a float; the inputs are too "
                              f"large for this calculation (batch={config.batch}, seq={config.seq})"[:300]) from None
    if not (_finite(total) and _finite(per_device)):
        require_finite_result("memory estimate", {"total": total, "per_device": per_device})
    return total, per_device


_unsplit_fields = operator.attrgetter(*(f.name for f in fields(MemoryConfig) if f.name not in SPLIT_FIELDS))


def estimate_memory(model: ModelShape | str | None = None, **kwargs: Any) -> MemoryEstimate:
    """Shortcut: ``estimate_memory("llama-2-7b", precision="bf16", mode="infer", batch=8)``."""
    shape = resolve_model(model) if isinstance(model, str) else model
    return estimate(MemoryConfig(model=shape, **kwargs))
