"""Measure what a training step of :class:`~aihw.models.tinygpt.TinyGPT` really holds, and set it beside the estimate.

* Weights, gradients, optimizer state: exact bytes summed over the tensors themselves (each storage once).
* Saved activations: every tensor autograd saves for backward passes through a
  ``torch.autograd.graph.saved_tensors_hooks`` pack hook. Tensors are counted by their *storage*, once: a
  tensor saved twice (softmax's output is saved by softmax and by the following matmul) or a view of a
  saved tensor costs no more memory. Storages of parameters and buffers are left out (they are weights).
* Peak: on CUDA, ``torch.cuda.max_memory_allocated`` around the step. On CPU there is no allocator counter,
  so the torch profiler records every allocation and free of the CPU allocator (``profile_memory=True``)
  and the peak is the highest running sum over those events in time order: the same quantity, read from
  the allocator's log. Both are reported as model state (weights + optimizer) + the step's peak increment.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, get_args

import torch

from aihw._validate import require_choice, require_positive
from aihw.memory.estimator import MemoryConfig, activation_bytes_per_layer, estimate
from aihw.models.tinygpt import TinyGPT, TinyGPTConfig, random_batch
from aihw.runtime.device import pick_device
from aihw.runtime.tensors import SavedTensorCounter, storage_bytes

MeasuredOptimizer = Literal["sgd", "sgd_momentum", "adam", "adamw"]  # the torch.optim ones of memory.Optimizer
OPTIMIZERS: tuple[str, ...] = get_args(MeasuredOptimizer)
MEASURED = ("weights", "gradients", "optimizer", "activations")
Precision = Literal["fp32", "bf16-autocast"]
PRECISIONS: tuple[str, ...] = get_args(Precision)


@dataclass(frozen=True)
class MeasureConfig:
    """One measured training step: which tiny model, batch, sequence length and optimizer, where."""

    model: TinyGPTConfig = TinyGPTConfig()  # architecture and recomputation mode
    batch: int = 8  # sequences per step
    seq: int | None = None  # tokens per sequence; None: the model's seq_len
    optimizer: MeasuredOptimizer = "adamw"  # fp32 states
    device: str = "cpu"  # "cpu", "cuda" or "auto" (cuda when available)
    seed: int = 0  # parameter init and batch
    # "bf16-autocast": forward and loss under torch.autocast(device_type, dtype=torch.bfloat16), parameters,
    # gradients and AdamW states stay fp32: mixed precision as torch runs it (see predict_autocast_activations)
    precision: Precision = "fp32"

    def __post_init__(self) -> None:
        require_positive("batch", self.batch, integer=True)
        if self.seq is not None:
            require_positive("seq", self.seq, integer=True)
            if self.seq > self.model.seq_len:
                raise ValueError(f"seq={self.seq} exceeds the model's seq_len={self.model.seq_len}")
        require_choice("optimizer", self.optimizer, OPTIMIZERS)
        require_choice("device", self.device, ("cpu", "cuda", "auto"))
        require_choice("precision", self.precision, PRECISIONS)
        if self.precision == "bf16-autocast" and (self.model.recompute != "none" or self.model.dropout > 0):
            raise ValueError(f"precision='bf16-autocast' is predicted only without recomputation and dropout; got "
                             f"recompute={self.model.recompute!r}, dropout={self.model.dropout}")

    @property
    def tokens(self) -> int:
        return self.model.seq_len if self.seq is None else self.seq


def model_state_bytes(model: torch.nn.Module, optimizer: torch.optim.Optimizer | None = None) -> dict[str, int]:
    """Exact bytes of weights, gradients and optimizer state (moments + step counters) held right now."""
    params = list(model.parameters())
    state = [v for s in (optimizer.state.values() if optimizer else ()) for v in s.values()
             if isinstance(v, torch.Tensor)]
    return {"weights": storage_bytes(params),
            "gradients": storage_bytes(p.grad for p in params if p.grad is not None),
            "optimizer": storage_bytes(state)}


def _device(name: str) -> torch.device:
    """The device (see :func:`aihw.runtime.device.pick_device`); "auto" on a Mac measures the CPU, since the
    peak is read from the CUDA allocator or the CPU profiler only."""
    device = pick_device(name)
    return device if device.type in ("cpu", "cuda") else torch.device("cpu")


def _optimizer(name: str, params) -> torch.optim.Optimizer:
    if name in ("sgd", "sgd_momentum"):
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9 if name == "sgd_momentum" else 0.0)
    return (torch.optim.Adam if name == "adam" else torch.optim.AdamW)(params, lr=1e-3)


@contextlib.contextmanager
def _quiet_native_stderr():
    """Silence file descriptor 2 for a moment: the profiler's C++ start/stop lines are noise in a notebook."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _cpu_step_peak(step) -> int:
    """Highest running sum of the CPU allocator's alloc/free events while ``step()`` runs, bytes."""
    from torch.profiler import ProfilerActivity, profile

    with _quiet_native_stderr(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    running = peak = 0
    for e in sorted(events, key=lambda e: e.start_ns()):
        running += e.nbytes()
        peak = max(peak, running)
    return peak


def _peak_increment(step, device: torch.device) -> int:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        step()
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_allocated(device) - base
    return _cpu_step_peak(step)


def measure(cfg: MeasureConfig) -> dict:
    """Run real training steps and return measured bytes per component, the peak, and how it was read.

    A first step creates the optimizer state; the measured step then starts from gradients set to None,
    as a training loop with ``zero_grad(set_to_none=True)`` does.
    """
    device = _device(cfg.device)
    torch.manual_seed(cfg.seed)
    model = TinyGPT(cfg.model).to(device).train()
    opt = _optimizer(cfg.optimizer, model.parameters())
    idx, targets = (t.to(device) for t in random_batch(cfg.model, cfg.batch, seq=cfg.tokens, seed=cfg.seed))

    def autocast():
        return torch.autocast(device.type, dtype=torch.bfloat16, enabled=cfg.precision == "bf16-autocast")

    def step() -> None:
        with autocast():
            _, loss = model(idx, targets)
        loss.backward()
        opt.step()

    step()
    opt.zero_grad(set_to_none=True)
    with SavedTensorCounter(model) as counter, autocast():
        _, loss = model(idx, targets)
    loss.backward()  # frees the saved tensors and makes the gradients
    state = model_state_bytes(model, opt)
    opt.zero_grad(set_to_none=True)
    del loss
    base = state["weights"] + state["optimizer"]
    increment = _peak_increment(step, device)
    method = "torch.cuda.max_memory_allocated" if device.type == "cuda" else "torch.profiler CPU allocator events"
    return {**state, "activations": counter.bytes, "saves": counter.saves, "peak": base + increment,
            "peak_method": method, "device": str(device), "precision": cfg.precision, "params": model.num_params(),
            "param_tensors": len(list(model.parameters()))}


def predict(cfg: MeasureConfig, *, param_tensors: int | None = None) -> dict[str, float]:
    """The analytic estimate for the same run (fp32 weights, no master copy, no dropout masks).

    torch's Adam/AdamW also keep a 4-byte ``step`` counter per parameter tensor; it is added when
    ``param_tensors`` is given, so the optimizer figure can be compared byte for byte. ``sum`` is the sum of
    the four components; ``peak`` is :func:`predict_peak`.
    """
    est = estimate(MemoryConfig(model=cfg.model.shape(), precision="fp32", optimizer=cfg.optimizer,
                                batch=cfg.batch, seq=cfg.tokens, recompute=cfg.model.recompute,
                                dropout=cfg.model.dropout > 0))
    out = {k: est.total[k] for k in MEASURED}
    if cfg.precision == "bf16-autocast":  # weights, gradients, Adam states: fp32 as before (4 + 4 + 8 bytes)
        out["activations"] = predict_autocast_activations(cfg)
    if param_tensors is not None and cfg.optimizer in ("adam", "adamw"):
        out["optimizer"] += 4 * param_tensors
    out["sum"] = sum(out.values())
    out["peak"] = predict_peak(cfg, out)
    return out


def predict_autocast_activations(cfg: MeasureConfig) -> float:
    """Bytes TinyGPT saves for backward under ``torch.autocast(dtype=torch.bfloat16)``, tensor by tensor.

    Autocast runs matmuls (Linear, Q·Kᵀ, P·V) in bf16 and keeps LayerNorm, softmax and the loss in fp32
    (torch's autocast op lists). What backward then holds, per layer (s tokens, b sequences, h wide, a heads):

    * fp32: both LayerNorm inputs (the residual stream, 2·sbh·4) and their mean/rstd (4 values per token·4);
      the softmax output (a·s²·b·4);
    * bf16: the bf16 casts that the matmuls save: the QKV input, Q, K, V, the out-projection input, the MLP
      input, the GELU input and the second linear's input ((1 + 3 + 1 + 1 + 4 + 4)·sbh·2) and the softmax
      output cast for P·V (a·s²·b·2).

    Plus the head (final LayerNorm input and stats fp32, its bf16 cast, the fp32 log-softmax output s·b·V·4),
    the token and position indices and the targets (int64), and one bf16 copy of every matmul weight (autocast
    casts each weight once per forward and the matmul saves that cast: 2 bytes × (12·h²·depth + V·h)), which a
    pure-fp32 run does not hold. No dropout, no recomputation (``MeasureConfig`` refuses them with autocast).
    """
    m, b, s = cfg.model, cfg.batch, cfg.tokens
    h, a, v, sb = m.width, m.heads, m.vocab, s * b
    ln = sb * h * 4 + 2 * sb * 4  # one LayerNorm's fp32 input and mean/rstd
    layer = 2 * ln + a * s * s * b * 4 + 14 * sb * h * 2 + a * s * s * b * 2
    head = ln + sb * h * 2 + sb * v * 4
    indices = 8 * (sb + s + sb)  # token ids, position ids, targets
    weight_casts = 2 * (12 * h * h * m.depth + v * h)
    return float(m.depth * layer + head + indices + weight_casts)


def predict_peak(cfg: MeasureConfig, components: dict[str, float]) -> float:
    """A model of a TinyGPT step's peak bytes: the larger of two moments of the backward pass.

    Both hold weights + optimizer state + the saved activations still alive, and, with recomputation, what
    backward re-materialises for one layer (its whole saved set with full, its ``a x s x s`` fp32 scores with
    selective). At the start of backward the loss adds two fp32 ``batch x seq x vocab`` gradient buffers
    (w.r.t. log-probabilities and logits). In the last layer's attention backward the head's and that layer's
    MLP's saved tensors are already freed, and two ``a x s x s`` fp32 buffers (gradients of the softmax output
    and of the scores) are alive. Gradients (created as activations are freed) and smaller temporaries are
    left out, so the measured peak is usually a little above this.
    """
    m, b, s = cfg.model, cfg.batch, cfg.tokens
    fp32 = 4
    alive = components["weights"] + components["optimizer"] + components["activations"]
    if m.recompute == "full":
        alive += activation_bytes_per_layer(seq=s, batch=b, hidden=m.width, heads=m.heads,
                                            bytes_per_value=fp32, dropout=m.dropout > 0)
    elif m.recompute == "selective":
        alive += fp32 * m.heads * s * s * b
    loss_phase = alive + 2 * fp32 * b * s * m.vocab
    head_saved = fp32 * (2 * s * b * m.width + s * b * m.vocab)
    last_mlp_saved = 0 if m.recompute == "full" else fp32 * 10 * m.width * s * b  # LN2/MLP inputs, 4h + 4h
    attention_phase = alive - head_saved - last_mlp_saved + 2 * fp32 * m.heads * s * s * b
    return max(loss_phase, attention_phase)


def compare(cfg: MeasureConfig) -> list[dict]:
    """Rows of component, predicted bytes, measured bytes, measured/predicted.

    The ``peak`` row compares the measured peak with :func:`predict_peak` and also carries ``sum``, the plain
    sum of the components, and ``ratio_to_sum``.
    """
    measured = measure(cfg)
    predicted = predict(cfg, param_tensors=measured["param_tensors"])
    rows = [{"component": k, "predicted": predicted[k], "measured": float(measured[k]),
             "ratio": measured[k] / predicted[k] if predicted[k] else float("nan")}
            for k in (*MEASURED, "peak")]
    rows[-1].update(sum=predicted["sum"], ratio_to_sum=measured["peak"] / predicted["sum"],
                    peak_method=measured["peak_method"])
    return rows


def sweep(base: MeasureConfig, **variations: Iterable) -> list[dict]:
    """``compare`` for each value of one or more fields, e.g. ``sweep(cfg, batch=[4, 8])``; flat rows."""
    rows = []
    for field, values in variations.items():
        for value in values:
            if field in {f.name for f in dataclasses.fields(TinyGPTConfig)}:
                cfg = dataclasses.replace(base, model=dataclasses.replace(base.model, **{field: value}))
            else:
                cfg = dataclasses.replace(base, **{field: value})
            rows += [{**r, field: value} for r in compare(cfg)]
    return rows
