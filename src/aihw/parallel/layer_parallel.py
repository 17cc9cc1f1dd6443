"""Model (layer) parallelism: cut :class:`~aihw.models.tinygpt.TinyGPT` into consecutive stages of blocks.

Stage 0 holds the embedding, the last stage the head and the loss. Activations go forward at each cut and the
gradient of each stage's input comes back. Two ways to run it:

* :class:`DeviceSplitModel`, one process, stages on several devices (``["cuda:0", "cpu"]`` on a one-GPU
  runtime, ``["cuda:0", "cuda:1"]`` on two GPUs, ``["cpu", "cpu"]`` anywhere): the "send" is a ``.to()``.
* :func:`layer_parallel_worker`, one process per stage (``aihw.parallel.launch``), with :mod:`aihw.parallel.p2p` send/recv.
  This is the naive version, kept to learn from: one batch, so only one stage works at a time. The pipeline
  schedules in :mod:`aihw.parallel.pipeline` feed micro-batches through the same stages.

The output projection is tied to the token embedding. Split across stages, the first and the last stage each
keep a copy (as Megatron-LM does) and :func:`tie_gradients` adds their two gradients, so every parameter's
gradient equals the unsplit model's.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from aihw._validate import require_positive
from aihw.layout.dims import stage_layers
from aihw.models.tinygpt import TinyGPT, TinyGPTConfig, random_batch
from aihw.parallel import p2p
from aihw.runtime.tensors import grad_of, tensor_bytes
from aihw.runtime.timing import synchronizer

TIED = ("embed.tok.weight", "head.out.weight")  # the same matrix in the unsplit model


def split_layers(depth: int, stages: int) -> list[range]:
    """Block indices of each stage, consecutive; uneven when ``stages`` does not divide ``depth``.

    The split is :func:`aihw.layout.dims.stage_layers` (the planner's): the remainder goes to the middle
    stages, so the first and last (which also hold the embedding and the head) get fewer blocks.
    """
    require_positive("depth", depth, integer=True)
    require_positive("stages", stages, integer=True)
    if stages > depth:
        raise ValueError(f"stages={stages} exceeds the {depth} layers (blocks): every stage needs at least one")
    bounds, start = [], 0
    for size in stage_layers(depth, stages):
        bounds.append(range(start, start + size))
        start += size
    return bounds


class Stage(nn.Module):
    """Blocks ``layers`` of a model, with the embedding if first and the head + loss if last.

    Parameter names are those of the unsplit model (``blocks.3.mlp.fc.weight``), so gradients compare by name.
    """

    def __init__(self, model: TinyGPT, layers: range, *, first: bool, last: bool) -> None:
        super().__init__()
        self.first, self.last = first, last
        embed = copy.deepcopy(model.embed) if first else None
        head = copy.deepcopy(model.head) if last else None
        if head is not None:
            head.out.weight = (embed.tok.weight if embed is not None  # one stage: keep the tie
                               else nn.Parameter(model.head.out.weight.detach().clone()))  # own copy
        self.embed = embed
        self.blocks = nn.ModuleDict({str(i): copy.deepcopy(model.blocks[i]) for i in layers})
        self.head = head

    def tied_weight(self) -> torch.Tensor:
        """This stage's copy of the tied embedding/output matrix (the embedding's on the first stage)."""
        if self.embed is not None:
            return self.embed.tok.weight
        if self.head is not None:
            return self.head.out.weight
        raise ValueError("a middle stage holds no copy of the tied matrix")

    def forward(self, x: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        """Token ids (first stage) or an activation in; an activation out, or on the last stage the loss
        (the logits when ``targets`` is None)."""
        if self.embed is not None:
            x = self.embed(x)
        for block in self.blocks.values():
            x = block(x)
        if self.head is None:
            return x
        logits = self.head(x)
        if targets is None:
            return logits
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def build_stages(cfg: TinyGPTConfig, stages: int, *, seed: int = 0) -> list[Stage]:
    """The unsplit model (initialised from ``seed``) cut into ``stages`` :class:`Stage` modules."""
    torch.manual_seed(seed)
    model = TinyGPT(cfg)
    ranges = split_layers(cfg.depth, stages)
    return [Stage(model, r, first=s == 0, last=s == stages - 1) for s, r in enumerate(ranges)]


def reference_step(cfg: TinyGPTConfig, batch: int, *, seed: int = 0) -> tuple[float, dict[str, torch.Tensor]]:
    """Loss and gradients (by name) of the unsplit model on the same batch: what every split must reproduce."""
    torch.manual_seed(seed)
    model = TinyGPT(cfg)
    idx, targets = random_batch(cfg, batch, seed=seed)
    _, loss = model(idx, targets)
    loss.backward()
    return float(loss.detach()), {n: grad_of(p).detach().clone() for n, p in model.named_parameters()}


def stage_grads(stage: Stage) -> dict[str, torch.Tensor]:
    """Gradients of a stage by unsplit-model name (the head's tied copy reported as the embedding)."""
    out = {}
    for name, param in stage.named_parameters():
        if param.grad is not None:
            out[TIED[0] if name == TIED[1] else name] = param.grad.detach().clone()
    return out


def tie_gradients(stage: Stage, *, world_size: int) -> None:
    """First and last stage exchange their gradients of the tied matrix and both keep the sum."""
    if world_size == 1 or not (stage.first or stage.last):
        return
    mine = grad_of(stage.tied_weight())
    peer = world_size - 1 if stage.first else 0
    pending, _ = p2p.send(mine, dst=peer, tag="tied-gradient", micro_batch=-1)
    theirs, _ = p2p.recv(mine.shape, src=peer, tag="tied-gradient", micro_batch=-1, dtype=mine.dtype)
    p2p.wait_all([pending])
    mine += theirs


@dataclass(frozen=True)
class LayerParallelConfig:
    """One forward and backward of TinyGPT split by layers, one stage per rank."""

    model: TinyGPTConfig = TinyGPTConfig(depth=4)  # depth must be a multiple of the number of ranks
    batch: int = 8  # sequences in the (single) batch
    seed: int = 0  # model initialisation and batch

    def __post_init__(self) -> None:
        require_positive("batch", self.batch, integer=True)


def layer_parallel_worker(ctx, cfg: LayerParallelConfig) -> dict:
    """Rank ``ctx.rank`` runs stage ``ctx.rank``: receive, compute, send; then the same backwards.

    Returns this rank's loss (last rank, else None), gradients by name, transfers and compute seconds.
    """
    rank, world = ctx.rank, ctx.world_size
    stage = build_stages(cfg.model, world, seed=cfg.seed)[rank]
    idx, targets = random_batch(cfg.model, cfg.batch, seed=cfg.seed)
    shape = (cfg.batch, cfg.model.seq_len, cfg.model.width)
    transfers: list[p2p.Transfer] = []
    pending: list[p2p.PendingSend] = []
    x = idx
    if rank > 0:
        x, record = p2p.recv_forward(shape, rank=rank, micro_batch=0)
        transfers.append(record)
    t0 = time.perf_counter()
    y = stage(x, targets)
    forward_s = time.perf_counter() - t0
    if rank < world - 1:
        handle, record = p2p.send_forward(y, rank=rank, micro_batch=0)
        pending.append(handle)
        transfers.append(record)
        grad, record = p2p.recv_backward(shape, rank=rank, micro_batch=0)
        transfers.append(record)
    else:
        grad = None  # the loss is a scalar: backward starts from 1
    t0 = time.perf_counter()
    torch.autograd.backward(y, grad)
    backward_s = time.perf_counter() - t0
    if rank > 0:
        handle, record = p2p.send_backward(grad_of(x), rank=rank, micro_batch=0)
        pending.append(handle)
        transfers.append(record)
    p2p.wait_all(pending)
    tie_gradients(stage, world_size=world)
    return {"rank": rank, "loss": float(y.detach()) if rank == world - 1 else None, "grads": stage_grads(stage),
            "transfers": transfers, "forward_s": forward_s, "backward_s": backward_s}


def boundary_costs(transfers: Sequence[Sequence[p2p.Transfer]]) -> list[dict]:
    """Bytes and seconds at each cut, from the records of all ranks (``transfers[rank]``).

    Seconds = receiver's end - sender's start: valid because every rank reads the same monotonic clock (one
    machine). One row per (cut, direction, micro-batch).
    """
    sends = {(t.peer, t.tag, t.micro_batch, r): t for r, ts in enumerate(transfers) for t in ts if t.kind == "send"}
    rows = []
    for r, ts in enumerate(transfers):
        for t in ts:
            sent = sends.get((r, t.tag, t.micro_batch, t.peer)) if t.kind == "recv" else None
            if sent is not None and t.tag in ("activation", "gradient"):
                rows.append({"cut": min(r, t.peer), "direction": "forward" if t.tag == "activation" else "backward",
                             "micro_batch": t.micro_batch, "bytes": t.nbytes, "seconds": t.end - sent.start})
    return sorted(rows, key=lambda row: (row["cut"], row["direction"] != "forward", row["micro_batch"]))


class DeviceSplitModel:
    """Stages on ``devices`` inside one process; activations and gradients cross devices with ``.to()``."""

    def __init__(self, cfg: TinyGPTConfig, devices: Sequence[str | torch.device], *, seed: int = 0) -> None:
        self.devices = [torch.device(d) for d in devices]
        self.stages = [s.to(d) for s, d in zip(build_stages(cfg, len(self.devices), seed=seed), self.devices,
                                                strict=True)]

    def step(self, idx: torch.Tensor, targets: torch.Tensor) -> tuple[float, list[dict]]:
        """Forward and backward of one batch; returns the loss and bytes/seconds per boundary and direction."""
        inputs: list[torch.Tensor] = []
        outputs: list[torch.Tensor] = []
        costs: list[dict] = []
        x = idx.to(self.devices[0])
        for s, stage in enumerate(self.stages):
            if s > 0:
                x, seconds = _timed_move(outputs[-1].detach(), self.devices[s])
                x.requires_grad_()
                costs.append({"cut": s - 1, "direction": "forward", "bytes": tensor_bytes(x), "seconds": seconds})
            inputs.append(x)
            outputs.append(stage(x, targets.to(self.devices[s]) if stage.last else None))
        outputs[-1].backward()
        for s in range(len(self.stages) - 1, 0, -1):
            grad, seconds = _timed_move(grad_of(inputs[s]), self.devices[s - 1])
            costs.append({"cut": s - 1, "direction": "backward", "bytes": tensor_bytes(grad), "seconds": seconds})
            outputs[s - 1].backward(grad)
        if len(self.stages) > 1:  # tied matrix: add the two copies' gradients on each side
            first, last = grad_of(self.stages[0].tied_weight()), grad_of(self.stages[-1].tied_weight())
            total = first + last.to(first.device)
            first.copy_(total)
            last.copy_(total.to(last.device))
        return float(outputs[-1].detach()), sorted(costs, key=lambda c: (c["cut"], c["direction"] != "forward"))

    def grads(self) -> dict[str, torch.Tensor]:
        """Gradients by unsplit-model name, on the CPU."""
        return {n: g.cpu() for s in self.stages for n, g in stage_grads(s).items()}


def _timed_move(tensor: torch.Tensor, device: torch.device) -> tuple[torch.Tensor, float]:
    """One copy across devices, timed between synchronisations of both ends (a one-off event, not a benchmark)."""
    sync_from, sync_to = synchronizer(tensor.device), synchronizer(device)
    sync_from()
    t0 = time.perf_counter()
    moved = tensor.to(device)
    sync_to()
    sync_from()
    return moved, time.perf_counter() - t0
