"""A small GPT-style decoder (nanoGPT-like) used wherever the course needs a real transformer to measure.

Kept deliberately plain so later chapters can cut it apart: token + position embedding (:attr:`TinyGPT.embed`),
the blocks in an ``nn.ModuleList`` (:attr:`TinyGPT.blocks`), and the head (:attr:`TinyGPT.head`: final
LayerNorm and an output projection tied to the token embedding). Attention is written out as matmul,
softmax, matmul (no fused kernel) so every tensor autograd keeps is visible and countable: the memory
chapter compares those bytes with the Korthikanti et al. (2022) formula.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from aihw._validate import require_choice, require_in_range, require_positive
from aihw.transformer.flops import RECOMPUTE_CHOICES, Recompute
from aihw.transformer.shapes import ModelShape


@dataclass(frozen=True)
class TinyGPTConfig:
    """Shape of the model. Defaults: a few hundred thousand parameters, a CPU step in milliseconds."""

    vocab: int = 256  # byte-level vocabulary: any text is valid input, no tokenizer needed
    width: int = 64  # model width h (embedding size); must be a multiple of heads
    depth: int = 2  # number of transformer blocks L
    heads: int = 4  # attention heads a; head dimension = width / heads
    seq_len: int = 64  # context length: the position table has this many rows
    dropout: float = 0.0  # 0 keeps runs deterministic and saves no dropout masks (the memory chapter's case)
    recompute: Recompute = "none"  # "selective" recomputes the attention core, "full" whole blocks

    def __post_init__(self) -> None:
        for name in ("vocab", "width", "depth", "heads", "seq_len"):
            require_positive(name, getattr(self, name), integer=True)
        if self.width % self.heads:
            raise ValueError(f"heads={self.heads} must divide width={self.width}")
        require_in_range("dropout", self.dropout, 0.0, 1.0, high_inclusive=False)
        require_choice("recompute", self.recompute, RECOMPUTE_CHOICES)

    def shape(self) -> ModelShape:
        """The same architecture as a :class:`ModelShape` (GPT-2 style), for the analytic estimator."""
        return ModelShape(f"tinygpt-{self.width}x{self.depth}", self.width, self.depth, self.heads,
                          vocab=self.vocab, max_seq=self.seq_len)


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with one fused QKV projection (as GPT-2 and nanoGPT)."""

    def __init__(self, cfg: TinyGPTConfig) -> None:
        super().__init__()
        self.heads, self.dropout, self.selective = cfg.heads, cfg.dropout, cfg.recompute == "selective"
        self.qkv = nn.Linear(cfg.width, 3 * cfg.width)
        self.proj = nn.Linear(cfg.width, cfg.width)
        mask = torch.full((cfg.seq_len, cfg.seq_len), float("-inf")).triu(1)  # additive: saves nothing
        self.causal_mask: torch.Tensor
        self.register_buffer("causal_mask", mask, persistent=False)

    def core(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """softmax(q k^T / sqrt(d) + mask) v: the part selective recomputation recomputes."""
        s = q.shape[-2]
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1])) + self.causal_mask[:s, :s]
        att = F.dropout(scores.softmax(dim=-1), self.dropout, self.training)
        return att @ v

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        q, k, v = self.qkv(x).split(h, dim=2)
        q, k, v = (t.view(b, s, self.heads, h // self.heads).transpose(1, 2) for t in (q, k, v))
        if self.selective and torch.is_grad_enabled():
            y = checkpoint(self.core, q, k, v, use_reentrant=False)
        else:
            y = self.core(q, k, v)
        y = y.transpose(1, 2).contiguous().view(b, s, h)
        return F.dropout(self.proj(y), self.dropout, self.training)


class MLP(nn.Module):
    """width -> 4*width -> GELU -> width, as GPT-2."""

    def __init__(self, cfg: TinyGPTConfig) -> None:
        super().__init__()
        self.fc = nn.Linear(cfg.width, 4 * cfg.width)
        self.proj = nn.Linear(4 * cfg.width, cfg.width)
        self.dropout = cfg.dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.dropout(self.proj(F.gelu(self.fc(x))), self.dropout, self.training)


class Block(nn.Module):
    """Pre-norm transformer block: x + attn(ln1(x)), then x + mlp(ln2(x))."""

    def __init__(self, cfg: TinyGPTConfig) -> None:
        super().__init__()
        self.ln1, self.attn = nn.LayerNorm(cfg.width), CausalSelfAttention(cfg)
        self.ln2, self.mlp = nn.LayerNorm(cfg.width), MLP(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Embedding(nn.Module):
    """Token embedding + learned position embedding (+ dropout)."""

    def __init__(self, cfg: TinyGPTConfig) -> None:
        super().__init__()
        self.tok = nn.Embedding(cfg.vocab, cfg.width)
        self.pos = nn.Embedding(cfg.seq_len, cfg.width)
        self.dropout = cfg.dropout

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1], device=idx.device)
        return F.dropout(self.tok(idx) + self.pos(pos), self.dropout, self.training)


class Head(nn.Module):
    """Final LayerNorm and the output projection to vocabulary logits (weight tied to the token table)."""

    def __init__(self, cfg: TinyGPTConfig, token_table: nn.Embedding) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(cfg.width)
        self.out = nn.Linear(cfg.width, cfg.vocab, bias=False)
        self.out.weight = token_table.weight  # tied: one matrix, counted once

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.ln(x))


class TinyGPT(nn.Module):
    """GPT-2-style decoder: ``embed`` -> ``blocks`` -> ``head``; ``forward(idx, targets)`` -> (logits, loss)."""

    def __init__(self, cfg: TinyGPTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = Embedding(cfg)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.depth))
        self.head = Head(cfg, self.embed.tok)
        self.apply(_init_weights)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor | None]:
        if idx.dim() != 2 or idx.shape[1] > self.cfg.seq_len:
            raise ValueError(f"idx must be (batch, seq) with seq <= {self.cfg.seq_len}, got {tuple(idx.shape)}")
        x = self.embed(idx)
        for block in self.blocks:
            if self.cfg.recompute == "full" and torch.is_grad_enabled():
                x = checkpoint(block, x, use_reentrant=False)  # keep only the block input
            else:
                x = block(x)
        logits = self.head(x)
        loss = None if targets is None else F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))
        return logits, loss

    def num_params(self) -> int:
        """Distinct parameters (the tied matrix once)."""
        return sum(p.numel() for p in self.parameters())


def _init_weights(module: nn.Module) -> None:
    # GPT-2 initialisation: N(0, 0.02) weights, zero biases.
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


def random_batch(cfg: TinyGPTConfig, batch: int, *, seq: int | None = None, seed: int = 0
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """Random token ids and next-token targets, shape (batch, seq): enough to measure memory and speed."""
    require_positive("batch", batch, integer=True)
    seq = cfg.seq_len if seq is None else seq
    require_in_range("seq", seq, 1, cfg.seq_len)
    gen = torch.Generator().manual_seed(seed)
    data = torch.randint(0, cfg.vocab, (batch, seq + 1), generator=gen)
    return data[:, :-1].contiguous(), data[:, 1:].contiguous()
