"""Mixed-precision training of TinyGPT on CPU: what each precision recipe keeps and loses, counted.

What is native and what is simulated, plainly:

* fp16: the model copy is ``model.half()`` and forward and backward run in torch's native fp16 CPU kernels.
  The loss is divided by ``accumulation`` (a power of two) before backward and the fp32 master gradient is
  multiplied back: this is one micro-batch of a gradient accumulation over ``accumulation`` micro-batches, as
  large-batch recipes divide the loss. It gives the fp16 backward the per-token gradient magnitudes of a big
  batch (the 1/N of a mean over N tokens) without running N tokens on a CPU. In fp32 it changes nothing
  (a power of two scales exactly).
* Loss scaling: torch's own ``torch.amp.GradScaler`` (dynamic: x2 every ``growth_interval`` good steps, /2 and
  skip the step on inf/NaN), over the fp32 master parameters.
* bf16: ``model.bfloat16()``, native bf16 kernels; "pure" bf16 adds the update to bf16 weights (round to
  nearest), "master" keeps fp32 weights and copies them to the bf16 model each step, "stochastic" rounds the
  fp32 result of w + update to bf16 stochastically (random bits added below bf16's mantissa, then truncated).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, get_args

import torch

from aihw._validate import require_choice, require_in_range, require_positive
from aihw.models.tinygpt import TinyGPT, TinyGPTConfig

Recipe = Literal["fp32", "fp16", "fp16_scaled", "bf16_pure", "bf16_master", "bf16_stochastic"]
RECIPES: tuple[str, ...] = get_args(Recipe)
UNDERFLOW_RECIPES: tuple[Recipe, ...] = ("fp32", "fp16", "fp16_scaled")  # the loss-scaling experiment
LOST_UPDATE_RECIPES: tuple[Recipe, ...] = ("bf16_pure", "bf16_master", "bf16_stochastic")  # the update experiment
Optimizer = Literal["adam", "sgd"]
OPTIMIZERS: tuple[str, ...] = get_args(Optimizer)

FP16_MIN_SUBNORMAL = 2.0**-24


def pattern_batch(vocab: int, batch: int, seq: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """A learnable task: arithmetic sequences mod ``vocab`` (random start, stride 1-4); predict the next token.

    The first tokens are unpredictable (the stride is unknown), later ones are determined: the loss falls from
    ln(vocab) towards a floor, so a run that stops learning shows.
    """
    start = torch.randint(0, vocab, (batch, 1), generator=generator)
    stride = torch.randint(1, 5, (batch, 1), generator=generator)
    data = (start + stride * torch.arange(seq + 1)) % vocab
    return data[:, :-1].contiguous(), data[:, 1:].contiguous()


@dataclass(frozen=True)
class MixedConfig:
    """One training run of TinyGPT on the pattern task under one precision recipe."""

    recipe: Recipe = "fp32"
    steps: int = 60
    lr: float = 3e-3
    optimizer: Optimizer = "adam"
    batch: int = 8
    seq: int = 32
    width: int = 32
    depth: int = 2
    heads: int = 2
    vocab: int = 32
    accumulation: int = 1  # loss divided by this (a power of two), fp32 master gradient multiplied back
    init_scale: float = 2.0**16  # GradScaler's initial scale (torch's default)
    growth_interval: int = 20  # GradScaler: good steps before doubling the scale (torch's default is 2000)
    seed: int = 0

    def __post_init__(self) -> None:
        require_choice("recipe", self.recipe, RECIPES)
        require_choice("optimizer", self.optimizer, OPTIMIZERS)
        for name in ("steps", "batch", "seq", "width", "depth", "heads", "vocab", "accumulation",
                     "growth_interval"):
            require_positive(name, getattr(self, name), integer=True)
        require_in_range("lr", self.lr, 0, 10, low_inclusive=False)
        require_positive("init_scale", self.init_scale)
        if self.accumulation & (self.accumulation - 1):
            raise ValueError(f"accumulation must be a power of two (exact scaling), got {self.accumulation}")
        if self.width % self.heads:
            raise ValueError(f"heads={self.heads} must divide width={self.width}")

    def model_config(self) -> TinyGPTConfig:
        return TinyGPTConfig(vocab=self.vocab, width=self.width, depth=self.depth, heads=self.heads,
                             seq_len=self.seq)


@dataclass(frozen=True)
class RunResult:
    """Per-step history of one run."""

    config: MixedConfig
    losses: tuple[float, ...]  # the true (undivided) loss each step, nan on a skipped step's inf
    zero_grad_fraction: tuple[float, ...]  # fraction of gradient elements exactly 0 where the fp32 run's are not
    lost_update_fraction: tuple[float, ...]  # fraction of weights that an update should move but did not
    skipped_steps: int  # steps GradScaler skipped (inf/NaN gradients)
    scales: tuple[float, ...]  # loss scale per step (1.0 without a scaler)

    @property
    def final_loss(self) -> float:
        """Mean loss over the last 10 steps (finite ones)."""
        tail = [x for x in self.losses[-10:] if math.isfinite(x)]
        return sum(tail) / len(tail) if tail else math.nan

    def as_dict(self) -> dict[str, object]:
        return {"recipe": self.config.recipe, "final_loss": self.final_loss, "skipped_steps": self.skipped_steps,
                "mean_zero_grad_fraction": _mean(self.zero_grad_fraction),
                "mean_lost_update_fraction": _mean(self.lost_update_fraction)}


def _grad(p: torch.Tensor) -> torch.Tensor:
    if p.grad is None:
        raise RuntimeError("a parameter received no gradient")
    return p.grad


def _mean(xs: tuple[float, ...]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def _make_optimizer(cfg: MixedConfig, params: Iterable[torch.Tensor]) -> torch.optim.Optimizer:
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(params, lr=cfg.lr)
    return torch.optim.Adam(params, lr=cfg.lr)


def stochastic_round_bf16(x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """fp32 -> bf16 rounding up or down with probability by distance: add 16 random bits below bf16's mantissa,
    then truncate (the standard bit trick; unbiased: E[round(x)] = x)."""
    bits = x.contiguous().view(torch.int32)
    noise = torch.randint(0, 1 << 16, x.shape, generator=generator, dtype=torch.int32)
    out = ((bits + noise) & ~0xFFFF).view(torch.float32)
    return out.to(torch.bfloat16)


def run(cfg: MixedConfig) -> RunResult:
    """Train TinyGPT for ``cfg.steps`` steps under ``cfg.recipe`` and record what happened at every step."""
    torch.manual_seed(cfg.seed)
    master = TinyGPT(cfg.model_config())  # fp32 weights: the master copy (or the model itself in fp32)
    gen = torch.Generator().manual_seed(cfg.seed + 1)
    sr_gen = torch.Generator().manual_seed(cfg.seed + 2)
    params = list(master.parameters())
    opt = _make_optimizer(cfg, params)
    low_dtype = {"fp16": torch.float16, "fp16_scaled": torch.float16}.get(cfg.recipe, torch.bfloat16)
    work: TinyGPT | None = None
    if cfg.recipe != "fp32":
        work = TinyGPT(cfg.model_config())
        work.load_state_dict(master.state_dict())
        work.to(low_dtype)
    scaler = (torch.amp.GradScaler("cpu", init_scale=cfg.init_scale, growth_interval=cfg.growth_interval)
              if cfg.recipe == "fp16_scaled" else None)
    losses: list[float] = []
    zero_frac: list[float] = []
    lost: list[float] = []
    scales: list[float] = []
    skipped = 0
    for _ in range(cfg.steps):
        x, y = pattern_batch(cfg.vocab, cfg.batch, cfg.seq, gen)
        opt.zero_grad(set_to_none=True)
        if work is None:
            _, loss = master(x, y)
            (loss / cfg.accumulation).backward()
            for p in params:
                _grad(p).mul_(cfg.accumulation)
            losses.append(loss.item())
            zero_frac.append(_zero_fraction([_grad(p) for p in params]))
            opt.step()
            lost.append(0.0)
            scales.append(1.0)
            continue
        work.zero_grad(set_to_none=True)
        _, loss = work(x, y)
        scaled = loss / cfg.accumulation
        if scaler is not None:
            scaled = scaler.scale(scaled)
        scaled.backward()
        losses.append(loss.float().item())
        wparams = list(work.parameters())
        low_grads = [_grad(wp) for wp in wparams]
        zero_frac.append(_zero_fraction(low_grads))
        for p, g in zip(params, low_grads, strict=True):
            p.grad = g.float() * cfg.accumulation
        if cfg.recipe in ("fp16", "fp16_scaled", "bf16_master"):
            if scaler is not None:
                scales.append(float(scaler.get_scale()))
                before = scaler.get_scale()
                scaler.step(opt)  # unscales, skips the step if any gradient is inf/NaN
                scaler.update()
                skipped += int(scaler.get_scale() < before)
            else:
                scales.append(1.0)
                opt.step()
            with torch.no_grad():
                for wp, p in zip(wparams, params, strict=True):
                    wp.copy_(p)  # fp32 master -> low-precision working copy
            lost.append(0.0)
            continue
        # pure bf16 / stochastic rounding: the weights live in bf16 only; the optimizer computes the update in fp32
        scales.append(1.0)
        with torch.no_grad():
            old = [wp.detach().clone() for wp in wparams]
            for p, wp in zip(params, wparams, strict=True):
                p.copy_(wp.float())
            opt.step()  # p = bf16 weight (exact in fp32) + fp32 update
            moved, should = 0, 0
            for p, wp, o in zip(params, wparams, old, strict=True):
                new = stochastic_round_bf16(p, sr_gen) if cfg.recipe == "bf16_stochastic" else p.to(torch.bfloat16)
                wp.copy_(new)
                wanted = p != o.float()  # the fp32 update moved this weight
                should += int(wanted.sum())
                moved += int((wanted & (new == o)).sum())
            lost.append(moved / should if should else 0.0)
    return RunResult(cfg, tuple(losses), tuple(zero_frac), tuple(lost), skipped, tuple(scales))


def _zero_fraction(grads: list[torch.Tensor]) -> float:
    flat = torch.cat([g.reshape(-1).float() for g in grads])
    return float((flat == 0).float().mean())


def gradient_underflow(cfg: MixedConfig) -> dict[str, float]:
    """One fp32 backward: the fraction of gradient elements that fp16 would flush to 0 (below 2^-25) or hold
    as subnormals (below 2^-14), at the loss divisor ``cfg.accumulation``: a prediction from magnitudes."""
    torch.manual_seed(cfg.seed)
    model = TinyGPT(cfg.model_config())
    x, y = pattern_batch(cfg.vocab, cfg.batch, cfg.seq, torch.Generator().manual_seed(cfg.seed + 1))
    _, loss = model(x, y)
    (loss / cfg.accumulation).backward()
    g = torch.cat([_grad(p).reshape(-1) for p in model.parameters()]).abs()
    nonzero = g[g > 0]
    return {"flush_to_zero": float((nonzero < FP16_MIN_SUBNORMAL / 2).float().mean()),
            "subnormal": float((nonzero < 2.0**-14).float().mean()),
            "median_abs_grad": float(nonzero.median())}


def lost_update_prediction(cfg: MixedConfig) -> dict[str, float]:
    """Before training: the fraction of weights whose first Adam update (about lr in size) is below half a bf16
    ulp of the weight, i.e. would round back to the same bf16 value."""
    torch.manual_seed(cfg.seed)
    model = TinyGPT(cfg.model_config())
    w = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).to(torch.bfloat16).float()
    a = w.abs()
    exp = torch.floor(torch.log2(torch.where(a > 0, a, torch.ones_like(a))))
    half_ulp = torch.where(a > 0, torch.exp2(exp - 7) / 2, torch.zeros_like(a))
    return {"below_half_ulp": float((half_ulp > cfg.lr).float().mean()),
            "lr": cfg.lr, "half_ulp_at_1": 2.0**-8}


def activation_memory(width: int = 64, depth: int = 2, heads: int = 4, seq: int = 64, batch: int = 4
                      ) -> list[dict[str, float | str]]:
    """Saved-for-backward bytes of one TinyGPT step in fp32 and under CPU autocast(bf16), measured with
    :class:`aihw.measure.memory.SavedTensorCounter`, beside :func:`aihw.memory.estimator.activation_bytes_per_layer`
    at 4 and 2 bytes per value (plus the head's logits)."""
    from aihw.measure.memory import SavedTensorCounter
    from aihw.memory.estimator import activation_bytes_per_layer
    from aihw.models.tinygpt import random_batch

    cfg = TinyGPTConfig(width=width, depth=depth, heads=heads, seq_len=seq)
    torch.manual_seed(0)
    model = TinyGPT(cfg)
    x, y = random_batch(cfg, batch)
    rows: list[dict[str, float | str]] = []
    for label, bytes_per_value, autocast in (("fp32", 4, False), ("autocast bf16", 2, True)):
        with SavedTensorCounter(model) as counter:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                _, loss = model(x, y)
        loss.backward()
        model.zero_grad(set_to_none=True)
        per_layer = activation_bytes_per_layer(seq=seq, batch=batch, hidden=width, heads=heads,
                                               bytes_per_value=bytes_per_value, dropout=False)
        predicted = depth * per_layer + seq * batch * cfg.vocab * 4  # + fp32 logits kept for the loss
        rows.append({"run": label, "measured_bytes": float(counter.bytes), "predicted_bytes": float(predicted),
                     "ratio": counter.bytes / predicted})
    return rows


def model_tensors(cfg: MixedConfig | None = None) -> dict[str, torch.Tensor]:
    """Real tensors of a trained TinyGPT: every Linear's weight and the activation it receives (tokens x features),
    after ``cfg.steps`` fp32 training steps on the pattern task (default: 60 steps of width 64)."""
    cfg = cfg or MixedConfig(width=64, heads=4, steps=60)
    torch.manual_seed(cfg.seed)
    model = TinyGPT(cfg.model_config())
    opt = _make_optimizer(cfg, list(model.parameters()))
    gen = torch.Generator().manual_seed(cfg.seed + 1)
    for _ in range(cfg.steps):
        x, y = pattern_batch(cfg.vocab, cfg.batch, cfg.seq, gen)
        opt.zero_grad(set_to_none=True)
        model(x, y)[1].backward()
        opt.step()
    out: dict[str, torch.Tensor] = {}
    hooks = []
    for name, mod in model.named_modules():
        if isinstance(mod, torch.nn.Linear):
            out[f"{name}.weight"] = mod.weight.detach().clone()

            def grab(m: torch.nn.Module, inp: tuple[torch.Tensor, ...], _o: torch.Tensor, name: str = name) -> None:
                out[f"{name}.input"] = inp[0].detach().reshape(-1, inp[0].shape[-1]).clone()

            hooks.append(mod.register_forward_hook(grab))
    with torch.no_grad():
        model(*pattern_batch(cfg.vocab, cfg.batch, cfg.seq, gen))
    for h in hooks:
        h.remove()
    return out
