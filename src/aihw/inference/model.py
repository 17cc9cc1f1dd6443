"""The course's small GPT for generation: grouped-query attention, a sliding window, and a KV cache.

:class:`GenGPT` is :class:`aihw.models.tinygpt.TinyGPT` with two options a serving engine cares about:

* ``kv_heads``: key/value heads shared by groups of query heads: ``heads`` (MHA, the TinyGPT case), fewer (GQA,
  Ainslie et al. 2023) or 1 (MQA, Shazeer 2019). The KV cache shrinks by ``heads / kv_heads``.
* ``window``: sliding-window attention: each token sees only the last ``window`` tokens, so the cache never holds
  more than ``window`` tokens per sequence (Mistral-7B's choice).

It reuses TinyGPT's embedding, MLP and head modules and keeps its parameter names, so with ``kv_heads == heads``
a trained TinyGPT's ``state_dict`` loads unchanged (:meth:`GenGPT.from_tinygpt`) and the logits agree.

Every forward goes through one function, :meth:`GenGPT.step`, with an attention *store* deciding where keys and
values live: :class:`NoCache` (recompute: attend over the tokens given, the reference), :class:`KVCache`
(contiguous per-batch buffers, this file) or :class:`aihw.inference.paged.PagedKVCache` (fixed-size blocks and a
block table per sequence). Positions are explicit ``(batch, tokens)`` tensors, so sequences in one batch may be at
different positions (continuous batching).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import nn

from aihw._validate import require_positive
from aihw.models.tinygpt import MLP, Embedding, Head, TinyGPT, TinyGPTConfig, _init_weights
from aihw.transformer.shapes import ModelShape


@dataclass(frozen=True)
class GenConfig(TinyGPTConfig):
    """TinyGPTConfig plus ``kv_heads`` (None: = heads, MHA) and ``window`` (None: full causal attention)."""

    kv_heads: int | None = None  # key/value heads; must divide heads. 1 = MQA
    window: int | None = None  # sliding-window span in tokens (the token itself included)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.kv_heads is not None:
            require_positive("kv_heads", self.kv_heads, integer=True)
            if self.heads % self.kv_heads:
                raise ValueError(f"kv_heads={self.kv_heads} must divide heads={self.heads}")
        if self.window is not None:
            require_positive("window", self.window, integer=True)

    @property
    def n_kv_heads(self) -> int:
        return self.heads if self.kv_heads is None else self.kv_heads

    @property
    def head_dim(self) -> int:
        return self.width // self.heads

    def shape(self) -> ModelShape:
        return ModelShape(f"gengpt-{self.width}x{self.depth}", self.width, self.depth, self.heads,
                          vocab=self.vocab, max_seq=self.seq_len, kv_heads=self.kv_heads,
                          sliding_window=self.window)


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """softmax(q kᵀ / sqrt(d), masked) v with grouped KV heads.

    q: (B, H, T, d); k, v: (B, Hkv, S, d); allowed: bool, broadcastable to (B, 1, T, S). Returns (B, H, T, d).
    """
    b, h, t, d = q.shape
    group = h // k.shape[1]
    if group > 1:  # each KV head serves `group` query heads: (B, Hkv, S, d) -> (B, H, S, d) without copying
        k = k[:, :, None].expand(b, k.shape[1], group, *k.shape[2:]).reshape(b, h, *k.shape[2:])
        v = v[:, :, None].expand(b, v.shape[1], group, *v.shape[2:]).reshape(b, h, *v.shape[2:])
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))  # (B, H, T, S)
    scores = scores.masked_fill(~allowed, float("-inf"))
    return scores.softmax(dim=-1) @ v


def allowed_mask(q_pos: torch.Tensor, k_pos: torch.Tensor, window: int | None) -> torch.Tensor:
    """Which keys each query may see: causal (k <= q), inside the window, and a real key (position >= 0).

    q_pos: (B, T), k_pos: (B, S) absolute positions (-1 marks an empty slot). Returns bool (B, 1, T, S).
    """
    q, k = q_pos[:, None, :, None], k_pos[:, None, None, :]
    ok = (k >= 0) & (k <= q)
    if window is not None:
        ok &= k > q - window
    return ok


class AttentionStore(Protocol):
    """Where keys and values live: given a layer's new q, k, v and positions, store k, v and return attention."""

    def attend(self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
               positions: torch.Tensor) -> torch.Tensor: ...


class NoCache:
    """Recompute: attend over exactly the tokens given (the reference every cache is tested against)."""

    def __init__(self, window: int | None) -> None:
        self.window = window

    def attend(self, layer, q, k, v, positions):
        return attend(q, k, v, allowed_mask(positions, positions, self.window))


class KVCache:
    """Contiguous KV cache for a batch of sequences that advance together: (B, Hkv, slots, d) per layer.

    ``slots`` = max_tokens, or the window if smaller (then a ring buffer: token p goes to slot p % window).
    """

    def __init__(self, cfg: GenConfig, batch: int, max_tokens: int, *, dtype: torch.dtype = torch.float32,
                 device: torch.device | str = "cpu") -> None:
        require_positive("batch", batch, integer=True)
        require_positive("max_tokens", max_tokens, integer=True)
        self.window = cfg.window
        self.slots = max_tokens if cfg.window is None else min(max_tokens, cfg.window)
        shape = (batch, cfg.n_kv_heads, self.slots, cfg.head_dim)
        self.k = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(cfg.depth)]
        self.v = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(cfg.depth)]
        self.slot_pos = torch.full((batch, self.slots), -1, dtype=torch.long, device=device)
        self.length = 0  # tokens written so far (per sequence)
        self._pending: torch.Tensor | None = None

    def nbytes(self) -> int:
        """Bytes of the K and V tensors (what the formula 2 x layers x kv_heads x head_dim x slots x bytes counts)."""
        return sum(t.numel() * t.element_size() for t in (*self.k, *self.v))

    def attend(self, layer, q, k, v, positions):
        t = k.shape[2]
        keys = torch.cat([self.k[layer], k], dim=2)
        values = torch.cat([self.v[layer], v], dim=2)
        out = attend(q, keys, values, allowed_mask(positions, torch.cat([self.slot_pos, positions], dim=1),
                                                   self.window))
        keep = min(t, self.slots)  # write the newest tokens into their slots (a ring when windowed)
        pos = positions[0, t - keep:]
        if self.window is None and int(pos[-1]) >= self.slots:
            raise ValueError(f"KV cache full: {self.slots} tokens")
        slots = pos % self.slots
        self.k[layer][:, :, slots] = k[:, :, t - keep:]
        self.v[layer][:, :, slots] = v[:, :, t - keep:]
        if layer == len(self.k) - 1:
            self.slot_pos[:, slots] = positions[:, t - keep:]
            self.length = int(positions[0, -1]) + 1
        return out

    def truncate(self, length: int) -> None:
        """Forget tokens at positions >= length (speculative decoding's rollback); not for a ring buffer."""
        if self.window is not None and self.length > self.slots:
            raise ValueError("a sliding-window ring buffer cannot roll back past overwritten tokens")
        self.slot_pos[self.slot_pos >= length] = -1
        self.length = min(self.length, length)


class Attention(nn.Module):
    """Causal self-attention with grouped KV heads; one fused projection to q, k, v (as TinyGPT's ``qkv``)."""

    def __init__(self, cfg: GenConfig) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = cfg.heads, cfg.n_kv_heads, cfg.head_dim
        self.qkv = nn.Linear(cfg.width, cfg.width + 2 * cfg.n_kv_heads * cfg.head_dim)
        self.proj = nn.Linear(cfg.width, cfg.width)

    def forward(self, x: torch.Tensor, layer: int, store: AttentionStore, positions: torch.Tensor) -> torch.Tensor:
        b, t, h = x.shape
        kv = self.kv_heads * self.head_dim
        q, k, v = self.qkv(x).split((h, kv, kv), dim=2)
        q = q.view(b, t, self.heads, self.head_dim).transpose(1, 2)  # (B, H, T, d)
        k = k.view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)  # (B, Hkv, T, d)
        v = v.view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)  # (B, Hkv, T, d)
        y = store.attend(layer, q, k, v, positions)  # (B, H, T, d)
        return self.proj(y.transpose(1, 2).reshape(b, t, h))


class Block(nn.Module):
    def __init__(self, cfg: GenConfig) -> None:
        super().__init__()
        self.ln1, self.attn = nn.LayerNorm(cfg.width), Attention(cfg)
        self.ln2, self.mlp = nn.LayerNorm(cfg.width), MLP(cfg)

    def forward(self, x, layer, store, positions):
        x = x + self.attn(self.ln1(x), layer, store, positions)
        return x + self.mlp(self.ln2(x))


class GenGPT(nn.Module):
    """TinyGPT with GQA/MQA and a sliding window, run through an attention store (see the module docstring)."""

    def __init__(self, cfg: GenConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = Embedding(cfg)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.depth))
        self.head = Head(cfg, self.embed.tok)
        self.apply(_init_weights)

    @classmethod
    def from_tinygpt(cls, model: TinyGPT) -> GenGPT:
        """The same weights in a GenGPT (MHA, no window)."""
        c = model.cfg
        gen = cls(GenConfig(vocab=c.vocab, width=c.width, depth=c.depth, heads=c.heads, seq_len=c.seq_len))
        gen.load_state_dict(model.state_dict())
        return gen.to(next(model.parameters()).dtype)

    def step(self, idx: torch.Tensor, positions: torch.Tensor, store: AttentionStore) -> torch.Tensor:
        """Logits (B, T, vocab) for tokens ``idx`` (B, T) at absolute ``positions`` (B, T), through ``store``."""
        if int(positions.max()) >= self.cfg.seq_len:
            raise ValueError(f"position {int(positions.max())} is past the model's {self.cfg.seq_len} positions")
        e = self.embed
        x = e.tok(idx) + e.pos(positions)
        for layer, block in enumerate(self.blocks):
            x = block(x, layer, store, positions)
        return self.head(x)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Logits of a whole sequence, recomputed from scratch (no cache)."""
        pos = torch.arange(idx.shape[1], device=idx.device).expand(idx.shape[0], -1)
        return self.step(idx, pos, NoCache(self.cfg.window))

    def new_cache(self, batch: int, max_tokens: int) -> KVCache:
        p = next(self.parameters())
        return KVCache(self.cfg, batch, max_tokens, dtype=p.dtype, device=p.device)

    def weight_bytes(self) -> int:
        return sum(p.numel() * p.element_size() for p in self.parameters())


@torch.no_grad()
def generate(model: GenGPT, prompt: torch.Tensor, new_tokens: int, *, cache: bool = True) -> torch.Tensor:
    """Greedy continuation of ``prompt`` (B, T0) by ``new_tokens`` tokens: with the KV cache (prefill, then one
    token per step) or by recomputing the whole sequence every step. Returns (B, T0 + new_tokens)."""
    require_positive("new_tokens", new_tokens, integer=True)
    b, t0 = prompt.shape
    out = prompt
    if not cache:
        for _ in range(new_tokens):
            out = torch.cat([out, model(out)[:, -1:].argmax(-1)], dim=1)
        return out
    kv = model.new_cache(b, t0 + new_tokens)
    pos = torch.arange(t0, device=prompt.device).expand(b, -1)
    logits = model.step(prompt, pos, kv)  # prefill
    for i in range(new_tokens):
        nxt = logits[:, -1:].argmax(-1)
        out = torch.cat([out, nxt], dim=1)
        if i + 1 < new_tokens:
            logits = model.step(nxt, torch.full((b, 1), t0 + i, device=prompt.device), kv)  # decode
    return out
