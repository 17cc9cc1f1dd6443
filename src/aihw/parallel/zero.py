"""Sharding the training state across data-parallel ranks: ZeRO-1 by hand, and PyTorch FSDP2 (``fully_shard``).

Plain data parallelism keeps a full copy of weights, gradients and optimizer state on every rank. ZeRO
(Rajbhandari et al. 2020) removes the redundancy in stages: stage 1 shards the optimizer state, stage 2 also
the gradients, stage 3 also the weights (FSDP, Zhao et al. 2023).

:class:`ZeroOneAdamW` is stage 1 written out: the ring all-reduce is split into its two halves and the
optimizer step goes in the middle. Ring reduce-scatter leaves rank r with the summed gradient of one chunk
of the flattened parameters (chunk (r+1) mod p, the ring's natural owner); rank r keeps AdamW moments for
that chunk only, updates it, and ring all-gather brings every rank the updated weights. Same bytes on the
wire as plain data parallelism, 1/p of the optimizer state.

Memory is measured by summing the bytes of the tensors each rank holds (weights, gradients, optimizer
state), and compared with :mod:`aihw.memory.estimator`'s estimate for the same parameter count, dp degree and ZeRO stage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from aihw._validate import require_choice, require_positive
from aihw.memory.estimator import MemoryConfig, ZeroStage, estimate
from aihw.parallel.collectives import chunk_bounds, ring_all_gather, ring_reduce_scatter
from aihw.parallel.data_parallel import DPConfig, digits_batch, make_model
from aihw.parallel.launch import LaunchConfig, RankContext, launch_each
from aihw.runtime.tensors import grad_of, tensor_bytes

Method = Literal["dp", "zero1", "fsdp"]
METHODS: tuple[str, ...] = get_args(Method)
ZERO_STAGE: dict[str, ZeroStage] = {"dp": 0, "zero1": 1, "fsdp": 3}


@dataclass(frozen=True)
class ZeroConfig:
    """One sharded-training run of the digits MLP with AdamW (fp32 weights, fp32 moments)."""

    method: str = "zero1"  # "dp" (full optimizer state everywhere), "zero1" (by hand) or "fsdp" (fully_shard)
    steps: int = 5  # optimizer steps
    global_batch: int = 48  # samples per step over all ranks (divisible by the world size)
    hidden: int = 256  # MLP width, as in aihw.parallel.data_parallel
    lr: float = 1e-3  # AdamW learning rate
    seed: int = 0

    def __post_init__(self) -> None:
        require_choice("method", self.method, METHODS)
        for name in ("steps", "global_batch", "hidden"):
            require_positive(name, getattr(self, name), integer=True)
        require_positive("lr", self.lr)

    def data(self) -> DPConfig:
        """The matching data/model config of :mod:`aihw.parallel.data_parallel`."""
        return DPConfig(steps=self.steps, global_batch=self.global_batch, hidden=self.hidden, seed=self.seed)


def state_bytes(optimizer: torch.optim.Optimizer) -> int:
    """Bytes of every tensor in the optimizer state (moments and step counters) on this rank."""
    return tensor_bytes(v for state in optimizer.state.values() for v in state.values()
                         if isinstance(v, torch.Tensor))


class ZeroOneAdamW:
    """AdamW whose moments live only for this rank's chunk of the flattened parameters (ZeRO stage 1)."""

    def __init__(self, params: list[nn.Parameter], *, lr: float) -> None:
        self.params = list(params)
        self.numel = sum(p.numel() for p in self.params)
        rank, p = dist.get_rank(), dist.get_world_size()
        self.start, self.end = chunk_bounds(self.numel, p)[(rank + 1) % p]  # what ring reduce-scatter leaves here
        flat = torch.cat([q.detach().reshape(-1) for q in self.params])
        self.shard = nn.Parameter(flat[self.start:self.end].clone())
        self.inner = torch.optim.AdamW([self.shard], lr=lr)

    def zero_grad(self) -> None:
        for param in self.params:
            param.grad = None

    def step(self) -> None:
        """Reduce-scatter the gradients, update this rank's chunk, all-gather the new weights."""
        flat = torch.cat([grad_of(q).reshape(-1) for q in self.params])
        start, end = ring_reduce_scatter(flat)
        assert (start, end) == (self.start, self.end)
        self.shard.grad = flat[start:end] / dist.get_world_size()
        self.inner.step()
        flat[start:end] = self.shard.detach()
        ring_all_gather(flat, owned_offset=1)
        offset = 0
        with torch.no_grad():
            for param in self.params:
                param.copy_(flat[offset:offset + param.numel()].view_as(param))
                offset += param.numel()

    def state_bytes(self) -> int:
        return state_bytes(self.inner)


def _build(config: ZeroConfig, world_size: int, device: torch.device):
    model = make_model(config.data()).to(device)
    if config.method == "zero1" and world_size > 1:
        return model, ZeroOneAdamW(list(model.parameters()), lr=config.lr)
    if config.method == "fsdp":
        from torch.distributed.fsdp import fully_shard

        for layer in model:
            if isinstance(layer, nn.Linear):
                fully_shard(layer)
        fully_shard(model)
    return model, torch.optim.AdamW(model.parameters(), lr=config.lr)


def _sync_dp(model: nn.Module, method: str, world_size: int) -> None:
    if method == "dp" and world_size > 1:
        for param in model.parameters():
            grad = grad_of(param)
            dist.all_reduce(grad)
            grad /= world_size


def _full_state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: (v.full_tensor() if hasattr(v, "full_tensor") else v).detach().cpu().clone()
            for k, v in model.state_dict().items()}


def zero_worker(ctx: RankContext | None, config: ZeroConfig) -> dict:
    """Train ``config.steps`` AdamW steps; return losses, the full weights and this rank's measured bytes.

    ``ctx=None`` runs the single-process reference (whole global batch, no communication).
    """
    rank, world_size = (ctx.rank, ctx.world_size) if ctx is not None else (0, 1)
    device = ctx.device if ctx is not None else torch.device("cpu")  # NCCL moves only the rank's CUDA tensors
    model, optimizer = _build(config, world_size, device)
    losses = []
    grads_bytes = 0
    for step in range(config.steps):
        x, y = (t.to(device) for t in digits_batch(step, config.data(), rank=rank, world_size=world_size))
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        grads_bytes = tensor_bytes(p.grad for p in model.parameters())
        _sync_dp(model, config.method, world_size)
        optimizer.step()
        losses.append(float(loss.item()))
    opt_bytes = optimizer.state_bytes() if isinstance(optimizer, ZeroOneAdamW) else state_bytes(optimizer)
    measured = {"weights": tensor_bytes(model.parameters()), "gradients": grads_bytes, "optimizer": opt_bytes}
    return {"rank": rank, "world_size": world_size, "method": config.method, "losses": losses,
            "state": {k: v.cpu() for k, v in _full_state(model).items()}, "measured": measured,
            "params": sum(p.numel() for p in make_model(config.data()).parameters())}


def predicted_bytes(params: int, *, world_size: int, method: str) -> dict[str, float]:
    """Per-rank weights, gradients and optimizer bytes from :mod:`aihw.memory.estimator` (fp32, AdamW, ZeRO stage)."""
    require_choice("method", method, METHODS)
    est = estimate(MemoryConfig(params=params, precision="fp32", optimizer="adamw", dp=world_size,
                                zero=ZERO_STAGE[method]))
    return {k: est.per_device[k] for k in ("weights", "gradients", "optimizer")}


def compare_memory(results: list[dict]) -> list[dict]:
    """One row per (rank, component): measured bytes, predicted bytes and their ratio."""
    rows = []
    for r in results:
        predicted = predicted_bytes(r["params"], world_size=r["world_size"], method=r["method"])
        for component, measured in r["measured"].items():
            rows.append({"method": r["method"], "rank": r["rank"], "component": component,
                         "measured_bytes": measured, "predicted_bytes": predicted[component],
                         "ratio": measured / predicted[component]})
    return rows


def run(configs: tuple[ZeroConfig, ...] = (ZeroConfig(),), *, world_size: int = 2, timeout_s: float = 180.0
        ) -> list[list[dict]]:
    """Launch once, run each config in turn; ``result[i][rank]`` is config i's result on ``rank``."""
    return launch_each(zero_worker, tuple(configs), config=LaunchConfig(world_size=world_size, timeout_s=timeout_s))
