"""Context parallelism: ring attention over ``cp`` ranks, checked against one process (Liu et al. 2023).

The sequence of ``s`` tokens is cut into ``cp`` contiguous chunks; rank ``r`` holds tokens
``[r s/cp, (r+1) s/cp)`` and computes everything that is per token (embeddings with their global positions,
norms, projections, MLP, head) on its own chunk. Attention is the one place a token needs other tokens: each
rank keeps its queries and passes its keys and values around a ring, ``cp - 1`` times; at each step it attends
its queries to the block it holds and folds the result into a running softmax (the online-softmax update of
FlashAttention: running maximum ``m``, running denominator ``l``, running weighted sum ``o``), so the result
equals softmax over the whole row without ever holding the whole row. With a causal mask, blocks from later
ranks are skipped (their scores are all masked) and the diagonal block gets the triangular mask.

Bytes each rank sends per attention layer: ``(cp - 1) x 2 x b x (s / cp) x h x bytes`` (K and V of its block,
once per step), the formula :func:`ring_bytes` gives and :func:`run` measures.

This is the forward pass (what the equality check needs); a training implementation also passes the key/value
gradients back around the ring. Production implementations balance the causal work by giving each rank two
chunks (one early, one late); here the chunks are contiguous, so later ranks do more work.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import torch

from aihw._validate import require_positive
from aihw.models.tinygpt import Block, TinyGPT, TinyGPTConfig, random_batch
from aihw.parallel.collectives import exchange
from aihw.parallel.launch import LaunchConfig, RankContext, launch_each


@dataclass(frozen=True)
class RingConfig:
    """One ring-attention check: TinyGPT ``model`` on ``batch`` sequences of ``model.seq_len`` tokens."""

    model: TinyGPTConfig = TinyGPTConfig(width=32, depth=2, heads=4, seq_len=24)
    batch: int = 2
    seed: int = 0

    def __post_init__(self) -> None:
        require_positive("batch", self.batch, integer=True)


def ring_bytes(cfg: RingConfig, cp: int, bytes_per_value: int = 4) -> int:
    """Bytes one rank sends in the ring of one attention layer: (cp - 1) steps of K and V of its block."""
    m = cfg.model
    return (cp - 1) * 2 * cfg.batch * (m.seq_len // cp) * m.width * bytes_per_value


def _pass_along(blocks: torch.Tensor, rank: int, world: int) -> tuple[torch.Tensor, int]:
    """Send ``blocks`` to the next rank, receive the previous rank's; returns (received, bytes sent)."""
    received = torch.empty_like(blocks)
    exchange(blocks.contiguous(), (rank + 1) % world, received, (rank - 1) % world)  # one batch: NCCL-safe
    return received, blocks.numel() * blocks.element_size()


def ring_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, rank: int, world: int,
                   causal: bool = True) -> tuple[torch.Tensor, int]:
    """softmax(q kᵀ/√d + mask) v over the whole sequence, with k, v of the other chunks passed around the ring.

    ``q, k, v``: (batch, heads, s/cp, head_dim), this rank's chunk. Returns (output, bytes sent).
    """
    scale = 1.0 / math.sqrt(q.shape[-1])
    n = q.shape[-2]
    m = torch.full(q.shape[:-1] + (1,), float("-inf"), dtype=q.dtype, device=q.device)
    denom = torch.zeros_like(m)
    out = torch.zeros_like(q)
    kv = torch.stack([k, v])
    sent = 0
    for step in range(world):
        source = (rank - step) % world  # whose block this rank holds now
        if not causal or source <= rank:
            scores = (q @ kv[0].transpose(-2, -1)) * scale
            if causal and source == rank:
                scores = scores + torch.full((n, n), float("-inf")).triu(1)
            block_max = scores.amax(dim=-1, keepdim=True)
            new_m = torch.maximum(m, block_max)
            correction = torch.exp(m - new_m)
            p = torch.exp(scores - new_m)
            denom = denom * correction + p.sum(dim=-1, keepdim=True)
            out = out * correction + p @ kv[1]
            m = new_m
        if step < world - 1:
            kv, nbytes = _pass_along(kv, rank, world)
            sent += nbytes
    return out / denom, sent


def _ring_forward(model: TinyGPT, idx: torch.Tensor, *, rank: int, world: int) -> tuple[torch.Tensor, int]:
    """TinyGPT's forward on this rank's chunk of tokens, attention done as ring attention. (logits, bytes)."""
    b, n = idx.shape
    positions = torch.arange(rank * n, (rank + 1) * n)
    x = model.embed.tok(idx) + model.embed.pos(positions)  # global positions of this chunk
    sent = 0
    for module in model.blocks:
        block = cast(Block, module)  # a ModuleList of Blocks; iterating it yields plain Modules to the type checker
        attn = block.attn
        y = block.ln1(x)
        h = y.shape[-1]
        q, k, v = attn.qkv(y).split(h, dim=2)
        q, k, v = (t.view(b, n, attn.heads, h // attn.heads).transpose(1, 2) for t in (q, k, v))
        o, nbytes = ring_attention(q, k, v, rank=rank, world=world)
        sent += nbytes
        x = x + attn.proj(o.transpose(1, 2).contiguous().view(b, n, h))
        x = x + block.mlp(block.ln2(x))
    return model.head(x), sent


def ring_worker(ctx: RankContext, cfg: RingConfig) -> dict:
    """Rank's chunk: ring-attention logits beside the single-process model's logits for the same tokens."""
    torch.manual_seed(cfg.seed)
    model = TinyGPT(cfg.model).eval()
    idx, _ = random_batch(cfg.model, cfg.batch, seed=cfg.seed)
    s, world = cfg.model.seq_len, ctx.world_size
    if s % world:
        raise ValueError(f"cp={world} must divide the sequence of {s} tokens")
    n = s // world
    chunk = idx[:, ctx.rank * n:(ctx.rank + 1) * n]
    with torch.no_grad():
        logits, sent = _ring_forward(model, chunk, rank=ctx.rank, world=world)
        reference = model(idx)[0][:, ctx.rank * n:(ctx.rank + 1) * n]
    return {"rank": ctx.rank, "logits": logits, "reference": reference, "bytes_sent": sent,
            "bytes_formula": cfg.model.depth * ring_bytes(cfg, world),
            "max_abs_diff": float((logits - reference).abs().max())}


def run(configs: tuple[RingConfig, ...] = (RingConfig(),), *, world_size: int = 2, timeout_s: float = 120.0
        ) -> list[list[dict]]:
    """Run every config on ``world_size`` gloo ranks in one launch; ``result[config][rank]``."""
    for cfg in configs:
        if cfg.model.seq_len % world_size:
            raise ValueError(f"cp={world_size} must divide the sequence of {cfg.model.seq_len} tokens; possible: "
                             f"{[d for d in range(1, cfg.model.seq_len + 1) if cfg.model.seq_len % d == 0]}")
    return launch_each(ring_worker, tuple(configs),
                       config=LaunchConfig(world_size=world_size, backend="gloo", timeout_s=timeout_s))

