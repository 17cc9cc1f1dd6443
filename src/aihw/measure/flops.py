"""Count the FLOPs of a real training step and time it: the check behind the 6·N·D rule.

PyTorch's ``FlopCounterMode`` counts the FLOPs of every matmul-like operator (2 per multiply-add) as the step
runs; we compare them with the analytic count of :func:`aihw.transformer.flops.model_flops_per_token`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.utils.flop_counter import FlopCounterMode

from aihw._validate import require_positive
from aihw.models.tinygpt import TinyGPT, TinyGPTConfig, random_batch
from aihw.runtime.timing import time_op


@dataclass(frozen=True)
class StepCount:
    """FLOPs and timing of one training step of a TinyGPT (forward + backward, no optimizer)."""

    config: TinyGPTConfig
    batch: int
    tokens: int
    params: int  # all parameters
    non_embedding_params: int  # parameters excluding the token and position tables (Kaplan et al.'s N)
    counted_flops: int  # FlopCounterMode total
    forward_flops: int
    seconds: float  # median wall time of one step on this machine

    @property
    def achieved_flops_per_s(self) -> float:
        return self.counted_flops / self.seconds


def count_training_step(config: TinyGPTConfig, *, batch: int = 8, repeats: int = 3, seed: int = 0) -> StepCount:
    """Run forward + backward of ``config`` on a random batch, count its FLOPs and time it (median of repeats)."""
    require_positive("batch", batch, integer=True)
    require_positive("repeats", repeats, integer=True)
    torch.manual_seed(seed)
    model = TinyGPT(config)
    idx, targets = random_batch(config, batch, seed=seed)
    with FlopCounterMode(display=False) as forward_counter:
        with torch.no_grad():
            model(idx, targets)
    with FlopCounterMode(display=False) as counter:
        _, loss = model(idx, targets)
        loss.backward()

    def step() -> None:
        model.zero_grad(set_to_none=True)
        _, loss = model(idx, targets)
        loss.backward()

    seconds = time_op(step, warmup=1, repeats=repeats, inner=1).median
    embedding = sum(p.numel() for p in model.embed.parameters())
    params = model.num_params()
    return StepCount(config=config, batch=batch, tokens=idx.numel(), params=params,
                     non_embedding_params=params - embedding, counted_flops=int(counter.get_total_flops()),
                     forward_flops=int(forward_counter.get_total_flops()), seconds=seconds)
