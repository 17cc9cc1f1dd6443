"""Tensor parallelism after Megatron-LM (Shoeybi et al. 2019): split each weight matrix across ``tp`` ranks.

* :class:`ColumnParallelLinear` keeps a slice of the output features (rows of ``W``): its output is sharded.
* :class:`RowParallelLinear` keeps a slice of the input features (columns of ``W``): each rank gets a partial
  sum, and one all-reduce adds them.

An MLP is column-parallel then row-parallel (the GELU stays local); attention splits the heads (the fused QKV
projection column-parallel, the output projection row-parallel). Each block therefore needs one all-reduce
in the forward pass (Megatron's ``g``, after the row-parallel layer) and one in the backward pass (``f``,
where the replicated input enters the column-parallel layer): two per transformer layer each way.

Every all-reduce goes through a :class:`CommLog`, which counts its bytes and times it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from aihw._validate import require_positive
from aihw.models.tinygpt import MLP, Block, CausalSelfAttention, TinyGPTConfig
from aihw.runtime.tensors import tensor_bytes


class CommLog:
    """All-reduces of one tensor-parallel group: (phase, bytes, seconds) per call."""

    def __init__(self, group=None) -> None:
        self.group = group
        self.calls: list[tuple[str, int, float]] = []

    def all_reduce(self, tensor: torch.Tensor, phase: str) -> torch.Tensor:
        start = time.perf_counter()
        dist.all_reduce(tensor, group=self.group)
        self.calls.append((phase, tensor_bytes(tensor), time.perf_counter() - start))
        return tensor

    def totals(self) -> dict:
        """Count and bytes of the all-reduces in each phase ("forward", "backward"), and their seconds."""
        out: dict[str, dict[str, float]] = {}
        for phase, nbytes, seconds in self.calls:
            row = out.setdefault(phase, {"count": 0, "bytes": 0, "seconds": 0.0})
            row["count"] += 1
            row["bytes"] += nbytes
            row["seconds"] += seconds
        return out


class _CopyToParallel(torch.autograd.Function):
    """Megatron's ``f``: identity forward; all-reduce of the input gradient backward."""

    @staticmethod
    def forward(ctx, x, log):
        ctx.log = log
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return ctx.log.all_reduce(grad.contiguous(), "backward"), None


class _ReduceFromParallel(torch.autograd.Function):
    """Megatron's ``g``: all-reduce of the partial sums forward; identity backward."""

    @staticmethod
    def forward(ctx, x, log):
        return log.all_reduce(x.contiguous(), "forward")

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def _shard(size: int, tp: int, what: str) -> int:
    if size % tp:
        raise ValueError(f"tensor-parallel degree tp={tp} must divide {what}={size}")
    return size // tp


class ColumnParallelLinear(nn.Module):
    """Rank ``rank``'s rows of a dense ``nn.Linear``; ``groups`` > 1 shards each of several stacked outputs
    (a fused QKV projection is 3 groups: this rank takes its share of Q, of K and of V)."""

    def __init__(self, dense: nn.Linear, *, rank: int, tp: int, log: CommLog, groups: int = 1) -> None:
        super().__init__()
        self.rank, self.tp, self.groups, self.log = rank, tp, groups, log
        self.weight = nn.Parameter(self.dense_slice(dense.weight.detach()).clone())
        self.bias = None if dense.bias is None else nn.Parameter(self.dense_slice(dense.bias.detach()).clone())

    def dense_slice(self, tensor: torch.Tensor) -> torch.Tensor:
        """This rank's part of a dense weight, bias or gradient (rows)."""
        per_group = tensor.shape[0] // self.groups
        part = _shard(per_group, self.tp, "the output features")
        chunks = tensor.split(per_group)
        return torch.cat([c[self.rank * part:(self.rank + 1) * part] for c in chunks])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(_CopyToParallel.apply(x, self.log), self.weight, self.bias)


class RowParallelLinear(nn.Module):
    """Rank ``rank``'s columns of a dense ``nn.Linear``; the input arrives sharded, the output is all-reduced."""

    def __init__(self, dense: nn.Linear, *, rank: int, tp: int, log: CommLog) -> None:
        super().__init__()
        self.rank, self.tp, self.log = rank, tp, log
        self.weight = nn.Parameter(self.dense_slice(dense.weight.detach()).clone())
        self.bias = None if dense.bias is None else nn.Parameter(dense.bias.detach().clone())  # added once

    def dense_slice(self, tensor: torch.Tensor) -> torch.Tensor:
        """This rank's columns of a dense weight (a bias is replicated, so it is returned whole)."""
        if tensor.dim() == 1:
            return tensor
        part = _shard(tensor.shape[1], self.tp, "the input features")
        return tensor[:, self.rank * part:(self.rank + 1) * part]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = _ReduceFromParallel.apply(F.linear(x, self.weight), self.log)
        return out if self.bias is None else out + self.bias


class ParallelAttention(nn.Module):
    """Causal self-attention with ``heads / tp`` heads on each rank."""

    def __init__(self, dense: CausalSelfAttention, *, rank: int, tp: int, log: CommLog) -> None:
        super().__init__()
        self.heads = _shard(dense.heads, tp, "the attention heads")
        self.qkv = ColumnParallelLinear(dense.qkv, rank=rank, tp=tp, log=log, groups=3)
        self.proj = RowParallelLinear(dense.proj, rank=rank, tp=tp, log=log)
        self.causal_mask: torch.Tensor
        self.register_buffer("causal_mask", dense.causal_mask.clone(), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=2)  # each (b, s, local width)
        local = q.shape[-1]
        q, k, v = (t.view(b, s, self.heads, local // self.heads).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1])) + self.causal_mask[:s, :s]
        y = (scores.softmax(dim=-1) @ v).transpose(1, 2).contiguous().view(b, s, local)
        return self.proj(y)


class ParallelMLP(nn.Module):
    """h -> 4h (column-parallel) -> GELU (local) -> h (row-parallel)."""

    def __init__(self, dense: MLP, *, rank: int, tp: int, log: CommLog) -> None:
        super().__init__()
        self.fc = ColumnParallelLinear(dense.fc, rank=rank, tp=tp, log=log)
        self.proj = RowParallelLinear(dense.proj, rank=rank, tp=tp, log=log)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(F.gelu(self.fc(x)))


class ParallelBlock(nn.Module):
    """A TinyGPT block with tensor-parallel attention and MLP; LayerNorms replicated on every rank."""

    def __init__(self, dense: Block, *, rank: int, tp: int, log: CommLog) -> None:
        super().__init__()
        self.ln1, self.ln2 = _copy_norm(dense.ln1), _copy_norm(dense.ln2)
        self.attn = ParallelAttention(dense.attn, rank=rank, tp=tp, log=log)
        self.mlp = ParallelMLP(dense.mlp, rank=rank, tp=tp, log=log)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))

    def dense_slice(self, name: str, tensor: torch.Tensor) -> torch.Tensor:
        """This rank's part of the dense block's parameter (or gradient) called ``name``."""
        owner = self.get_submodule(name.rsplit(".", 1)[0])
        slicer = getattr(owner, "dense_slice", None)  # the parallel linears have one; norms are replicated
        return slicer(tensor) if slicer is not None else tensor


def _copy_norm(norm: nn.LayerNorm) -> nn.LayerNorm:
    copy = nn.LayerNorm(norm.normalized_shape)
    copy.load_state_dict(norm.state_dict())
    return copy


def check_tp(cfg: TinyGPTConfig, tp: int) -> None:
    """ValueError unless ``tp`` divides the heads, the width and the MLP width (the layout rules of
    :class:`aihw.layout.dims.ParallelDims`, checked here with TinyGPT's own wording)."""
    require_positive("tp", tp, integer=True)
    _shard(cfg.heads, tp, "the attention heads")
    _shard(cfg.width, tp, "the width")
    _shard(4 * cfg.width, tp, "the MLP width")
    from aihw.layout.dims import ParallelDims

    ParallelDims(tp=tp).validate_model(cfg.shape())  # the same rules the planner and memory estimator apply


def tp_comm_per_layer(*, batch: int, seq: int, hidden: int, tp: int, bytes_per_value: float = 4) -> dict:
    """Megatron's count for one transformer layer: 2 all-reduces forward + 2 backward of b*s*h values.

    ``payload_bytes``: the tensor each all-reduce sums; ``ring_bytes_per_rank``: what one rank sends for it
    in a ring all-reduce, 2 (tp - 1) / tp times the payload.
    """
    require_positive("tp", tp, integer=True)
    payload = batch * seq * hidden * bytes_per_value
    return {"forward_all_reduces": 2, "backward_all_reduces": 2, "payload_bytes": payload,
            "bytes_per_step": 4 * payload, "ring_bytes_per_rank": 4 * payload * 2 * (tp - 1) / tp}


@dataclass(frozen=True)
class TensorParallelConfig:
    """One forward and backward of a TinyGPT block, dense and tensor-parallel, on the same input."""

    model: TinyGPTConfig = TinyGPTConfig(width=64, heads=4)  # tp must divide heads and width
    batch: int = 4  # sequences
    repeats: int = 3  # timed repeats of the parallel step (the last one's log is kept)
    seed: int = 0

    def __post_init__(self) -> None:
        require_positive("batch", self.batch, integer=True)
        require_positive("repeats", self.repeats, integer=True)


def tensor_parallel_worker(ctx, cfg: TensorParallelConfig) -> dict:
    """Run the dense block and this rank's shard; return (parallel, dense) pairs to compare, and the log."""
    check_tp(cfg.model, ctx.world_size)
    torch.manual_seed(cfg.seed)
    dense = Block(cfg.model)
    x = torch.randn(cfg.batch, cfg.model.seq_len, cfg.model.width, generator=torch.Generator().manual_seed(1))
    probe = torch.randn(x.shape, generator=torch.Generator().manual_seed(2))  # loss = sum(out * probe)
    x_dense = x.clone().requires_grad_()
    out_dense = dense(x_dense)
    (out_dense * probe).sum().backward()
    for _ in range(cfg.repeats):
        log = CommLog()
        block = ParallelBlock(dense, rank=ctx.rank, tp=ctx.world_size, log=log)
        x_par = x.clone().requires_grad_()
        out_par = block(x_par)
        (out_par * probe).sum().backward()
    pairs = {"output": (out_par.detach(), out_dense.detach()), "input_grad": (x_par.grad, x_dense.grad)}
    dense_params = dict(dense.named_parameters())
    for name, param in block.named_parameters():
        dense_grad = dense_params[name].grad
        assert dense_grad is not None, f"{name} got no gradient in the dense block"
        pairs[f"grad:{name}"] = (param.grad, block.dense_slice(name, dense_grad))
    return {"rank": ctx.rank, "pairs": pairs, "comm": log.totals(), "calls": list(log.calls)}
