"""Expert parallelism: a mixture-of-experts layer whose experts live on different ranks (all-to-all dispatch).

:class:`MoELayer` is a top-k routed MoE MLP (router -> softmax over the top-k logits -> the chosen experts'
outputs weighted by those gates, as Mixtral does; Jiang et al. 2024). Run on one process it is the reference.
With expert parallelism over ``ep`` ranks, rank ``r`` holds experts ``[r E/ep, (r+1) E/ep)`` and its own share of
the tokens (data parallel). One forward pass:

1. route: each token picks ``top_k`` experts; the (token, expert) assignments are sorted by the rank owning
   the expert;
2. dispatch: an all-to-all sends every assignment's token vector to that rank (the counts first, so each
   rank knows how much it receives);
3. each rank runs its experts on what it received;
4. combine: a second all-to-all sends the outputs back, and each token sums its ``top_k`` outputs times gates.

Without a capacity limit the result equals the unsplit layer's exactly (up to summation order). With
``capacity_factor`` each expert takes at most ``ceil(capacity_factor x tokens x top_k / experts)`` assignments and
drops the rest (the token keeps its residual), as Switch Transformer / GShard do; :func:`run` measures the
tokens each expert received (the load imbalance) and how many were dropped.

The all-to-all is ``torch.distributed.all_to_all_single`` or the teaching version built from send/recv
(:func:`aihw.parallel.collectives.p2p_all_to_all`), chosen by ``MoEConfig.all_to_all``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from aihw._validate import require_choice, require_positive
from aihw.parallel.launch import LaunchConfig, RankContext, launch_each

AllToAll = Literal["library", "p2p"]
ALL_TO_ALL_CHOICES: tuple[str, ...] = get_args(AllToAll)


@dataclass(frozen=True)
class MoEConfig:
    """One MoE layer check: shapes, routing, and the tokens each rank holds."""

    width: int = 16
    ffn: int = 32  # inner width of one expert
    experts: int = 4
    top_k: int = 2
    tokens_per_rank: int = 24
    skew: float = 0.0  # added to expert 0's router logit: > 0 makes the load uneven on purpose
    capacity_factor: float | None = None  # None: no limit (exact); else slots = ceil(cf x tokens x k / E)
    all_to_all: str = "library"  # "library" (dist.all_to_all_single) or "p2p" (send/recv)
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("width", "ffn", "experts", "top_k", "tokens_per_rank"):
            require_positive(name, getattr(self, name), integer=True)
        if self.top_k > self.experts:
            raise ValueError(f"top_k={self.top_k} cannot exceed experts={self.experts}")
        if self.capacity_factor is not None:
            require_positive("capacity_factor", self.capacity_factor)
        require_choice("all_to_all", self.all_to_all, ALL_TO_ALL_CHOICES)


class Expert(nn.Module):
    def __init__(self, width: int, ffn: int) -> None:
        super().__init__()
        self.fc, self.proj = nn.Linear(width, ffn), nn.Linear(ffn, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(F.gelu(self.fc(x)))


class MoELayer(nn.Module):
    """Router + ``experts`` MLPs; ``forward`` is the single-process reference."""

    def __init__(self, cfg: MoEConfig) -> None:
        super().__init__()
        torch.manual_seed(cfg.seed)
        self.cfg = cfg
        self.router = nn.Linear(cfg.width, cfg.experts, bias=False)
        self.experts = nn.ModuleList(Expert(cfg.width, cfg.ffn) for _ in range(cfg.experts))

    def route(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(expert ids (tokens, k), gates (tokens, k)): softmax over the top-k router logits."""
        logits = self.router(x)
        if self.cfg.skew:
            logits = logits + torch.nn.functional.one_hot(torch.tensor(0), self.cfg.experts) * self.cfg.skew
        top, ids = logits.topk(self.cfg.top_k, dim=-1)
        return ids, top.softmax(dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ids, gates = self.route(x)
        out = torch.zeros_like(x)
        keep = _capacity_mask(ids.flatten(), self.cfg, total_tokens=x.shape[0]).view(ids.shape)
        for e, expert in enumerate(self.experts):
            tok, slot = torch.nonzero((ids == e) & keep, as_tuple=True)
            if tok.numel():
                out.index_add_(0, tok, gates[tok, slot, None] * expert(x[tok]))
        return out


def _capacity_mask(flat_ids: torch.Tensor, cfg: MoEConfig, *, total_tokens: int) -> torch.Tensor:
    """True for the assignments an expert keeps: the first ``capacity`` of each expert, in token order."""
    if cfg.capacity_factor is None:
        return torch.ones_like(flat_ids, dtype=torch.bool)
    capacity = math.ceil(cfg.capacity_factor * total_tokens * cfg.top_k / cfg.experts)
    seen = torch.zeros(cfg.experts, dtype=torch.long)
    keep = torch.zeros_like(flat_ids, dtype=torch.bool)
    for i, e in enumerate(flat_ids.tolist()):
        if seen[e] < capacity:
            keep[i] = True
            seen[e] += 1
    return keep


def tokens(cfg: MoEConfig, world_size: int) -> torch.Tensor:
    """Every rank's tokens, stacked (rank r holds rows [r T, (r+1) T))."""
    g = torch.Generator().manual_seed(cfg.seed + 1)
    return torch.randn(world_size * cfg.tokens_per_rank, cfg.width, generator=g)


def _all_to_all(x: torch.Tensor, send: list[int], recv: list[int], how: str) -> torch.Tensor:
    out = x.new_empty((sum(recv),) + tuple(x.shape[1:]))
    if how == "library":
        dist.all_to_all_single(out, x.contiguous(), output_split_sizes=recv, input_split_sizes=send)
        return out
    from aihw.parallel.collectives import p2p_all_to_all

    return torch.cat(p2p_all_to_all(list(x.split(send)), recv_sizes=recv))


def ep_forward(layer: MoELayer, x: torch.Tensor, *, rank: int, world: int) -> tuple[torch.Tensor, dict]:
    """The expert-parallel forward of this rank's tokens ``x``; (output, facts: bytes, counts, dropped)."""
    cfg = layer.cfg
    if cfg.experts % world:
        raise ValueError(f"ep={world} must divide the {cfg.experts} experts")
    per_rank = cfg.experts // world
    ids, gates = layer.route(x)
    flat_ids, flat_gates = ids.flatten(), gates.flatten()
    flat_tok = torch.arange(x.shape[0]).repeat_interleave(cfg.top_k)
    dest = flat_ids // per_rank
    order = torch.argsort(dest, stable=True)
    send = torch.bincount(dest, minlength=world)
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)  # how many assignments each rank will receive from each other rank
    send_l, recv_l = send.tolist(), recv.tolist()
    rows = _all_to_all(x[flat_tok[order]], send_l, recv_l, cfg.all_to_all)
    got_ids = _all_to_all(flat_ids[order].to(torch.float32)[:, None], send_l, recv_l, cfg.all_to_all)
    got_ids = got_ids[:, 0].long()
    # capacity is enforced by the expert's owner over the tokens of the whole group, in arrival order
    keep = _capacity_mask(got_ids, cfg, total_tokens=x.shape[0] * world) if cfg.capacity_factor else \
        torch.ones_like(got_ids, dtype=torch.bool)
    y = torch.zeros_like(rows)
    counts = torch.zeros(cfg.experts, dtype=torch.long)
    for j in range(per_rank):
        e = rank * per_rank + j
        sel = torch.nonzero((got_ids == e) & keep, as_tuple=True)[0]
        counts[e] = int(((got_ids == e)).sum())
        if sel.numel():
            y[sel] = layer.experts[e](rows[sel])
    back = _all_to_all(y, recv_l, send_l, cfg.all_to_all)
    out = torch.zeros_like(x)
    out.index_add_(0, flat_tok[order], flat_gates[order, None] * back)
    sent = (sum(send_l) - send_l[rank]) * cfg.width * x.element_size()
    dist.all_reduce(counts)
    dropped = int((~keep).sum())
    return out, {"dispatch_bytes_sent": sent, "tokens_per_expert": counts.tolist(), "dropped": dropped,
                 "local_assignments": send_l[rank], "assignments": int(send.sum())}


def moe_worker(ctx: RankContext, cfg: MoEConfig) -> dict:
    """This rank's expert-parallel output beside the single-process layer's output for the same tokens."""
    layer = MoELayer(cfg).eval()
    everything = tokens(cfg, ctx.world_size)
    t = cfg.tokens_per_rank
    mine = everything[ctx.rank * t:(ctx.rank + 1) * t]
    with torch.no_grad():
        out, facts = ep_forward(layer, mine, rank=ctx.rank, world=ctx.world_size)
        reference = layer(everything)[ctx.rank * t:(ctx.rank + 1) * t] if cfg.capacity_factor is None else None
    counts = facts["tokens_per_expert"]
    mean = sum(counts) / len(counts)
    return {"rank": ctx.rank, "output": out, "reference": reference, **facts,
            "imbalance": max(counts) / mean if mean else 0.0}


def run(configs: tuple[MoEConfig, ...] = (MoEConfig(),), *, world_size: int = 2, timeout_s: float = 120.0
        ) -> list[list[dict]]:
    """Run every config on ``world_size`` gloo ranks in one launch; ``result[config][rank]``."""
    return launch_each(moe_worker, tuple(configs),
                       config=LaunchConfig(world_size=world_size, backend="gloo", timeout_s=timeout_s))
