"""FP8 training recipes, simulated on TinyGPT: every Linear's inputs are rounded to fp8 as the recipe scales them.

Simulated, not native: the matmul runs in fp32 on values that were first divided by a scale, rounded to fp8
with torch's own ``float8_e4m3fn`` / ``float8_e5m2`` casts (forward: activations and weights in E4M3; backward:
output gradients in E5M2, the "hybrid" format of Micikevicius et al. 2022) and multiplied back. The numerics of
each value are those of an FP8 tensor core with fp32 accumulation; the speed is not.

Recipes (how the scale s is chosen for a tensor x; values beyond the format's max after x/s saturate and are
counted as overflows):

* ``current``: per-tensor current scaling, s = amax(x) / fp8_max, from this very tensor (needs an extra pass
  over x before the cast on real hardware).
* ``delayed``: per-tensor delayed scaling, s = max(amax history of the last ``history`` steps) / fp8_max, then
  the current amax joins the history (Transformer Engine's default recipe). Starts from s = 1. Tensors whose
  amax grows faster than the history can follow overflow.
* ``block``: MX-style block scaling, one power-of-two scale per ``block`` values along the last dimension,
  2^(floor(log2 amax_block) - emax) (OCP MX v1.0), for every tensor (the weight-gradient matmul uses the same
  blocks, along the output features: a simplification).
* ``none``: no fp8 (fp32 reference).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Literal, get_args

import torch
from torch import nn

from aihw._validate import require_choice, require_in_range, require_positive
from aihw.mixed.training import pattern_batch
from aihw.models.tinygpt import TinyGPT, TinyGPTConfig

Fp8Recipe = Literal["none", "current", "delayed", "block"]
FP8_RECIPES: tuple[Fp8Recipe, ...] = get_args(Fp8Recipe)
_DTYPES = {"e4m3": (torch.float8_e4m3fn, 448.0, 8), "e5m2": (torch.float8_e5m2, 57344.0, 15)}


@dataclass(frozen=True)
class Fp8Config:
    """One simulated FP8 training run of TinyGPT on the pattern task."""

    recipe: Fp8Recipe = "current"
    steps: int = 60
    lr: float = 3e-3
    history: int = 16  # delayed scaling: amax history length (steps)
    block: int = 32  # block scaling: values per scale (must divide every Linear's in/out features)
    batch: int = 8
    seq: int = 32
    width: int = 32
    depth: int = 2
    heads: int = 2
    vocab: int = 32
    seed: int = 0

    def __post_init__(self) -> None:
        require_choice("fp8 recipe", self.recipe, FP8_RECIPES)
        for name in ("steps", "history", "block", "batch", "seq", "width", "depth", "heads", "vocab"):
            require_positive(name, getattr(self, name), integer=True)
        require_in_range("lr", self.lr, 0, 10, low_inclusive=False)
        if self.width % self.heads:
            raise ValueError(f"heads={self.heads} must divide width={self.width}")
        if self.recipe == "block":
            for dim, what in ((self.width, "width"), (4 * self.width, "MLP width 4*width"), (self.vocab, "vocab")):
                if dim % self.block:
                    raise ValueError(f"block size {self.block} does not divide the {what} ({dim}); block scaling "
                                     f"needs every Linear's feature dimensions to be a multiple of it")


@dataclass
class TensorScaler:
    """Scale state of one tensor role (e.g. block 0's qkv input): its recipe, history and overflow count."""

    recipe: str
    fmt: str
    history: int
    block: int
    amaxes: deque = field(default_factory=deque)
    overflows: int = 0
    values: int = 0

    def quantize(self, x: torch.Tensor) -> torch.Tensor:
        dtype, top, emax = _DTYPES[self.fmt]
        x = x.detach().float()
        if self.recipe == "block":
            b = x.reshape(*x.shape[:-1], x.shape[-1] // self.block, self.block)
            amax = b.abs().amax(dim=-1, keepdim=True)
            exp = torch.floor(torch.log2(torch.where(amax > 0, amax, torch.ones_like(amax)))) - emax
            block_scale = torch.exp2(exp.clamp(-127, 127))
            out = self._cast(b / block_scale, dtype, top) * block_scale
            return out.reshape(x.shape)
        amax_now = float(x.abs().max())
        if self.recipe == "current":
            scale = amax_now / top if amax_now > 0 else 1.0
        else:  # delayed
            past = max(self.amaxes) if self.amaxes else 0.0
            scale = past / top if past > 0 else 1.0
            self.amaxes.append(amax_now)
            if len(self.amaxes) > self.history:
                self.amaxes.popleft()
        return self._cast(x / scale, dtype, top) * scale

    def _cast(self, scaled: torch.Tensor, dtype: torch.dtype, top: float) -> torch.Tensor:
        over = scaled.abs() > top * (1 + 2.0**-20)  # beyond max (not the last-bit excess of amax / (amax / max))
        self.overflows += int(over.sum())
        self.values += scaled.numel()
        return scaled.clamp(-top, top).to(dtype).float()


class _Fp8Matmul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b, sx, sw, sg):
        xq, wq = sx.quantize(x), sw.quantize(w)
        ctx.save_for_backward(xq, wq)
        ctx.sg, ctx.has_bias = sg, b is not None
        y = xq @ wq.t()
        return y + b if b is not None else y

    @staticmethod
    def backward(ctx, gy):
        xq, wq = ctx.saved_tensors
        gq = ctx.sg.quantize(gy)
        gx = gq @ wq
        gw = gq.reshape(-1, gq.shape[-1]).t() @ xq.reshape(-1, xq.shape[-1])
        gb = gy.reshape(-1, gy.shape[-1]).sum(0) if ctx.has_bias else None
        return gx, gw, gb, None, None, None


class Fp8Linear(nn.Module):
    """Wraps an ``nn.Linear`` (sharing its parameters) so its matmuls see fp8-rounded inputs."""

    def __init__(self, linear: nn.Linear, cfg: Fp8Config) -> None:
        super().__init__()
        self.linear = linear
        self.sx = TensorScaler(cfg.recipe, "e4m3", cfg.history, cfg.block)
        self.sw = TensorScaler(cfg.recipe, "e4m3", cfg.history, cfg.block)
        self.sg = TensorScaler(cfg.recipe, "e5m2", cfg.history, cfg.block)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _Fp8Matmul.apply(x, self.linear.weight, self.linear.bias, self.sx, self.sw, self.sg)

    def scalers(self) -> dict[str, TensorScaler]:
        return {"activation": self.sx, "weight": self.sw, "gradient": self.sg}


def _wrap_linears(module: nn.Module, cfg: Fp8Config) -> list[Fp8Linear]:
    wrapped: list[Fp8Linear] = []
    for name, child in list(module.named_children()):
        if isinstance(child, nn.Linear):
            new = Fp8Linear(child, cfg)
            setattr(module, name, new)
            wrapped.append(new)
        else:
            wrapped.extend(_wrap_linears(child, cfg))
    return wrapped


@dataclass(frozen=True)
class Fp8Result:
    config: Fp8Config
    losses: tuple[float, ...]
    overflows: dict[str, int]  # saturated values per role: activation, weight, gradient
    values: dict[str, int]  # values quantized per role

    @property
    def final_loss(self) -> float:
        tail = [x for x in self.losses[-10:] if math.isfinite(x)]
        return sum(tail) / len(tail) if tail else math.nan

    def as_dict(self) -> dict[str, object]:
        return {"recipe": self.config.recipe, "final_loss": self.final_loss,
                **{f"overflows_{k}": v for k, v in self.overflows.items()},
                "overflow_fraction": sum(self.overflows.values()) / max(1, sum(self.values.values()))}


def run_fp8(cfg: Fp8Config) -> Fp8Result:
    """Train TinyGPT with every Linear under the FP8 recipe ``cfg.recipe``; losses and overflow counts."""
    torch.manual_seed(cfg.seed)
    model = TinyGPT(TinyGPTConfig(vocab=cfg.vocab, width=cfg.width, depth=cfg.depth, heads=cfg.heads,
                                  seq_len=cfg.seq))
    layers = _wrap_linears(model, cfg) if cfg.recipe != "none" else []
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    gen = torch.Generator().manual_seed(cfg.seed + 1)
    losses: list[float] = []
    for _ in range(cfg.steps):
        x, y = pattern_batch(cfg.vocab, cfg.batch, cfg.seq, gen)
        opt.zero_grad(set_to_none=True)
        _, loss = model(x, y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    overflows = {"activation": 0, "weight": 0, "gradient": 0}
    values = dict.fromkeys(overflows, 0)
    for layer in layers:
        for role, s in layer.scalers().items():
            overflows[role] += s.overflows
            values[role] += s.values
    return Fp8Result(cfg, tuple(losses), overflows, values)
