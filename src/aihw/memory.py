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

import math
from dataclasses import asdict, dataclass, field

from aihw._validate import (
    coerce_numbers,
    require_choice,
    require_finite_result,
    require_in_range,
    require_positive,
    require_positive_int,
)
from aihw.model_presets import ModelShape, get_preset

# Storage bytes per value. tf32 is a tensor-core input mode: values are stored as 32-bit floats.
PRECISION_BYTES: dict[str, float] = {
    "fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1, "int8": 1, "int4": 0.5,
}
# Optimizer state in bytes per parameter (fp32 states). 8-bit Adam: two int8 moments + fp32 absmax per block.
ADAM8BIT_BLOCK = 2048
OPTIMIZER_STATE_BYTES: dict[str, float] = {
    "sgd": 0, "sgd_momentum": 4, "adam": 8, "adamw": 8, "adam8bit": 2 + 2 * 4 / ADAM8BIT_BLOCK,
}
COMPONENTS = ("weights", "gradients", "optimizer", "master_weights", "activations", "kv_cache", "overhead")
MODES = ("train", "infer")
RECOMPUTE = ("none", "selective", "full")
GB, GiB = 1e9, 2**30


def activation_bytes_per_layer(*, seq: int, batch: int, hidden: int, heads: int, kv_dim: int | None = None,
                               mlp_saved_width: int | None = None, bytes_per_value: float = 2,
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
    kv_precision: str | None = None  # KV-cache precision; None: the activation precision
    overhead_fraction: float = 0.0  # framework overhead and temporaries, as a fraction of the rest
    overhead_bytes: float = 0.0  # fixed overhead per device (e.g. CUDA context), bytes

    def __post_init__(self) -> None:
        coerce_numbers(self, "params", "batch", "seq", "zero", "dp", "tp", "pp", "overhead_fraction",
                       "overhead_bytes")
        if (self.model is None) == (self.params is None):
            raise ValueError("give exactly one of model (a ModelShape or preset) and params (a count such as 7e9)")
        if isinstance(self.model, str):
            object.__setattr__(self, "model", get_preset(self.model))
        if self.params is not None:
            require_positive("params", self.params)
        require_choice("precision", self.precision, PRECISION_BYTES)
        require_choice("mode", self.mode, MODES)
        require_choice("optimizer", self.optimizer, OPTIMIZER_STATE_BYTES)
        require_choice("recompute", self.recompute, RECOMPUTE)
        if self.kv_precision is not None:
            require_choice("kv_precision", self.kv_precision, PRECISION_BYTES)
        for name in ("batch", "dp", "tp", "pp"):
            require_positive(name, getattr(self, name), integer=True)
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

    def _check_parallel(self, m: ModelShape) -> None:
        if m.heads % self.tp:
            raise ValueError(f"tp={self.tp} must divide the {m.heads} attention heads of {m.name}")
        if m.layers % self.pp:
            raise ValueError(f"pp={self.pp} must divide the {m.layers} layers of {m.name}")
        if m.n_kv_heads % self.tp and self.tp % m.n_kv_heads:
            raise ValueError(f"tp={self.tp} and kv_heads={m.n_kv_heads} of {m.name} must divide one another")

    @property
    def param_count(self) -> float:
        return float(self.model.param_count()) if self.model is not None else float(self.params)

    @property
    def tokens(self) -> int | None:
        if self.model is None:
            return self.seq
        return self.seq if self.seq is not None else self.model.max_seq

    @property
    def activation_bytes_per_value(self) -> float:
        """Activations stay 32-bit in fp32/tf32 runs and 16-bit otherwise (8/4-bit formats quantize weights)."""
        return 4 if PRECISION_BYTES[self.precision] == 4 else 2


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
    """Bytes per parameter for weights, gradients, optimizer and master copy (before any sharding)."""
    w = PRECISION_BYTES[cfg.precision]
    if cfg.mode == "infer":
        return {"weights": w, "gradients": 0.0, "optimizer": 0.0, "master_weights": 0.0}
    master = cfg.master_weights if cfg.master_weights is not None else w < 4
    return {"weights": w, "gradients": max(w, 2.0), "optimizer": OPTIMIZER_STATE_BYTES[cfg.optimizer],
            "master_weights": 4.0 if master else 0.0}


def _stage_params(cfg: MemoryConfig) -> float:
    """Parameters on the busiest device after tensor and pipeline splitting."""
    m = cfg.model
    if m is None:
        return cfg.param_count / (cfg.tp * cfg.pp)
    layers = m.layers // cfg.pp * m.layer_params()
    first, last = m.embedding_params(), m.head_params()
    if cfg.pp == 1:
        return (layers + first + last) / cfg.tp
    if m.tied_embeddings:  # the last stage keeps its own copy of the tied matrix (Megatron-LM)
        last += m.vocab * m.hidden
    return (layers + max(first, last)) / cfg.tp


def _activations(cfg: MemoryConfig, *, tp: int) -> float:
    """Saved activations of the whole model (training) or one layer's live working set (inference), bytes."""
    m, s, b = cfg.model, cfg.tokens, cfg.batch
    if cfg.mode == "infer":  # residual stream in and out + the widest MLP intermediate; fused attention
        widest = (2 if m.gated_mlp else 1) * m.ffn_dim
        return cfg.activation_bytes_per_value * s * b * (2 * m.hidden + widest) / tp + 4 * b * m.vocab
    mlp = (4 if m.gated_mlp else 2) * m.ffn_dim  # GELU: its input + 2nd linear input; SwiGLU: gate, up, silu, down-in
    per_layer = activation_bytes_per_layer(
        seq=s, batch=b, hidden=m.hidden, heads=m.heads, kv_dim=m.kv_dim, mlp_saved_width=mlp,
        bytes_per_value=cfg.activation_bytes_per_value, dropout=cfg.dropout,
        recompute=cfg.recompute, tp=tp, sequence_parallel=cfg.sequence_parallel)
    head = (2 * cfg.activation_bytes_per_value * s * b * m.hidden + 4 * s * b * m.vocab) / tp  # norm, logits fp32
    # 1F1B: the first stage holds pp micro-batches of layers/pp layers, i.e. all L layers' worth.
    return m.layers * per_layer + head


def _kv_cache(cfg: MemoryConfig, *, tp: int, pp: int) -> float:
    m = cfg.model
    nbytes = PRECISION_BYTES[cfg.kv_precision] if cfg.kv_precision else cfg.activation_bytes_per_value
    kv_heads = max(1, m.n_kv_heads // tp)  # fewer kv heads than tp ranks: each rank keeps one
    cached = cfg.tokens if m.sliding_window is None else min(cfg.tokens, m.sliding_window)  # rolling buffer
    return 2 * (m.layers // pp) * kv_heads * m.head_dim * cached * cfg.batch * nbytes


def _components(cfg: MemoryConfig, *, split: bool) -> dict[str, float]:
    per_param = _model_state(cfg)
    params = _stage_params(cfg) if split else cfg.param_count
    out = {k: v * params for k, v in per_param.items()}
    if split and cfg.mode == "train":
        z, n = cfg.zero, cfg.dp
        out["optimizer"] /= n if z >= 1 else 1
        out["master_weights"] /= n if z >= 1 else 1
        out["gradients"] /= n if z >= 2 else 1
        out["weights"] /= n if z >= 3 else 1
    tp, pp = (cfg.tp, cfg.pp) if split else (1, 1)
    has_arch = cfg.model is not None
    out["activations"] = _activations(cfg, tp=tp) if has_arch else 0.0
    out["kv_cache"] = _kv_cache(cfg, tp=tp, pp=pp) if has_arch and cfg.mode == "infer" else 0.0
    out["overhead"] = cfg.overhead_fraction * sum(out.values()) + cfg.overhead_bytes
    return out


def _assumptions(cfg: MemoryConfig) -> tuple[str, ...]:
    st = _model_state(cfg)
    notes = [f"{cfg.param_count:.4g} parameters"
             + (f" computed from the {cfg.model.name} architecture" if cfg.model else " as given") + ".",
             f"Weights in {cfg.precision}: {st['weights']:g} bytes per parameter; GB = 1e9 bytes, GiB = 2^30."]
    if cfg.mode == "train":
        notes.append(f"Gradients {st['gradients']:g} B/param; {cfg.optimizer} state "
                     f"{st['optimizer']:g} B/param (fp32); fp32 master copy {st['master_weights']:g} B/param.")
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
    """Bytes per component for ``config``; see the module docstring for what each component counts.

    Raises NonFiniteResult (a ValueError) when the inputs are so large that a byte count overflows.
    """
    total, per_device = _components(config, split=False), _components(config, split=True)
    require_finite_result("memory estimate", {"total": total, "per_device": per_device})
    return MemoryEstimate(config, total, per_device, _assumptions(config))


def estimate_memory(model: ModelShape | str | None = None, **kwargs) -> MemoryEstimate:
    """Shortcut: ``estimate_memory("llama-2-7b", precision="bf16", mode="infer", batch=8)``."""
    return estimate(MemoryConfig(model=model, **kwargs))
