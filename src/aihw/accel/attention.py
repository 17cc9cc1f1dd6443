"""Attention three ways: naive (materialises the seq x seq scores), PyTorch's fused SDPA, and a teaching version
of FlashAttention's tiled algorithm with the online softmax, in plain torch.

Shapes follow nanoGPT: q, k, v are (B, nh, T, hs). The tiled version (Dao et al., NeurIPS 2022; Milakov &
Gimelshein 2018 for the online softmax) walks over key/value blocks keeping, per query row, the running maximum
``m``, the running sum ``denom`` and the unnormalised output; it saves only q, k, v, the output and the row
log-sum-exp for backward, and recomputes each block's probabilities there (FlashAttention-2's backward, Dao
2023). So the sequence^2 term of the saved activations disappears; :func:`saved_bytes` measures it.
"""

from __future__ import annotations

import math
from typing import Literal, get_args

import torch
import torch.nn.functional as F

from aihw._validate import require_choice, require_positive
from aihw.measure.memory import SavedTensorCounter

AttentionKind = Literal["naive", "sdpa", "tiled"]
ATTENTION_KINDS: tuple[str, ...] = get_args(AttentionKind)


def naive_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool = True) -> torch.Tensor:
    """softmax(q k^T / sqrt(hs)) v with the (B, nh, T, T) score and probability tensors in memory."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])           # (B, nh, T, T)
    if causal:
        t = q.shape[-2]
        mask = torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v                              # (B, nh, T, hs)


def _block_mask(q0: int, rows: int, k0: int, cols: int, device) -> torch.Tensor:
    qi = torch.arange(q0, q0 + rows, device=device)[:, None]
    kj = torch.arange(k0, k0 + cols, device=device)[None, :]
    return kj > qi                                                        # True where masked (future keys)


class _TiledAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, block: int, causal: bool):
        scale = 1 / math.sqrt(q.shape[-1])
        t = q.shape[-2]
        out = torch.zeros_like(q)                                         # (B, nh, T, hs), unnormalised
        m = torch.full(q.shape[:-1], float("-inf"), dtype=q.dtype, device=q.device)   # (B, nh, T) running max
        denom = torch.zeros(q.shape[:-1], dtype=q.dtype, device=q.device)             # (B, nh, T) running sum
        for k0 in range(0, t, block):
            kb, vb = k[..., k0:k0 + block, :], v[..., k0:k0 + block, :]   # (B, nh, Bc, hs)
            s = (q @ kb.transpose(-2, -1)) * scale                        # (B, nh, T, Bc): one block only
            if causal:
                s = s.masked_fill(_block_mask(0, t, k0, kb.shape[-2], q.device), float("-inf"))
            m_new = torch.maximum(m, s.amax(dim=-1))
            m_safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
            p = torch.exp(s - m_safe[..., None])
            correction = torch.exp(m - m_safe)                           # rescales what was summed so far
            denom = denom * correction + p.sum(dim=-1)
            out = out * correction[..., None] + p @ vb
            m = m_new
        out = out / denom[..., None]
        lse = m + torch.log(denom)                                           # (B, nh, T) row log-sum-exp
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.block, ctx.causal = block, causal
        return out

    @staticmethod
    def backward(ctx, d_out):
        q, k, v, out, lse = ctx.saved_tensors
        scale = 1 / math.sqrt(q.shape[-1])
        t = q.shape[-2]
        dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
        delta = (d_out * out).sum(dim=-1, keepdim=True)                   # (B, nh, T, 1)
        for k0 in range(0, t, ctx.block):
            kb, vb = k[..., k0:k0 + ctx.block, :], v[..., k0:k0 + ctx.block, :]
            s = (q @ kb.transpose(-2, -1)) * scale
            if ctx.causal:
                s = s.masked_fill(_block_mask(0, t, k0, kb.shape[-2], q.device), float("-inf"))
            p = torch.exp(s - lse[..., None])                             # recomputed probabilities of the block
            dv[..., k0:k0 + ctx.block, :] = p.transpose(-2, -1) @ d_out
            dp = d_out @ vb.transpose(-2, -1)
            ds = p * (dp - delta)
            dq += (ds @ kb) * scale
            dk[..., k0:k0 + ctx.block, :] = (ds.transpose(-2, -1) @ q) * scale
        return dq, dk, dv, None, None


def tiled_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, block: int = 64,
                    causal: bool = True) -> torch.Tensor:
    """FlashAttention's algorithm over key blocks of ``block`` rows (teaching version, plain torch)."""
    require_positive("block", block, integer=True)
    return _TiledAttention.apply(q, k, v, block, causal)


def attention(kind: str, q, k, v, *, causal: bool = True, block: int = 64) -> torch.Tensor:
    """Dispatch on ``kind``: "naive", "sdpa" (``F.scaled_dot_product_attention``) or "tiled"."""
    require_choice("kind", kind, ATTENTION_KINDS)
    if kind == "naive":
        return naive_attention(q, k, v, causal=causal)
    if kind == "sdpa":
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return tiled_attention(q, k, v, block=block, causal=causal)


def random_qkv(batch: int = 1, heads: int = 4, seq: int = 256, head_dim: int = 32, *, seed: int = 0,
               dtype: torch.dtype = torch.float32, device: str = "cpu", requires_grad: bool = True):
    """Three (B, nh, T, hs) tensors; ValueError for sizes <= 0 or beyond ``2**31`` score elements."""
    for name, v in (("batch", batch), ("heads", heads), ("seq", seq), ("head_dim", head_dim)):
        require_positive(name, v, integer=True)
    if batch * heads * seq * seq > 2**31:
        raise ValueError(f"batch*heads*seq^2 = {batch * heads * seq * seq:,} score elements is beyond what "
                         "this experiment allows (2^31); lower seq or batch")
    gen = torch.Generator(device="cpu").manual_seed(seed)
    shape = (batch, heads, seq, head_dim)
    return tuple(torch.randn(shape, generator=gen, dtype=dtype).to(device).requires_grad_(requires_grad)
                 for _ in range(3))


def saved_bytes(kind: str, q, k, v, *, block: int = 64) -> int:
    """Bytes autograd keeps for backward when ``kind`` attention runs forward (each storage once)."""
    with SavedTensorCounter(torch.nn.Module()) as counter:
        attention(kind, q, k, v, block=block)
    return counter.bytes


def traffic_bytes(kind: str, *, batch: int, heads: int, seq: int, head_dim: int, bytes_per_element: int = 4,
                  block_q: int = 128) -> float:
    """Forward memory traffic (bytes) between HBM and the chip, per the FlashAttention paper's accounting.

    naive (and unfused SDPA math): read Q, K (2 T d), write S (T^2), read S and write P (2 T^2), read P and V
    (T^2 + T d), write O (T d): 4 T d + 4 T^2 elements per head. tiled / fused SDPA: Q and O once, K and V once
    per query block of ``block_q`` rows held on chip: 2 T d + 2 T d * ceil(T / block_q).
    """
    require_choice("kind", kind, ATTENTION_KINDS)
    for name, val in (("batch", batch), ("heads", heads), ("seq", seq), ("head_dim", head_dim),
                      ("bytes_per_element", bytes_per_element), ("block_q", block_q)):
        require_positive(name, val, integer=True)
    t, d = seq, head_dim
    per_head = 4 * t * d + 4 * t * t if kind == "naive" else 2 * t * d + 2 * t * d * math.ceil(t / block_q)
    return float(batch * heads * per_head * bytes_per_element)


def compare_attention(seqs: tuple[int, ...] = (128, 256, 512), *, batch: int = 1, heads: int = 4,
                      head_dim: int = 32, block: int = 64, repeats: int = 3) -> list[dict]:
    """For each sequence length and kind: forward+backward time (median and spread), bytes saved for backward
    (measured) and forward HBM traffic (computed). Checks every kind against SDPA first (``assert_close``)."""
    from aihw.runtime.timing import time_op

    rows = []
    for seq in seqs:
        q, k, v = random_qkv(batch, heads, seq, head_dim)
        reference = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        for kind in ATTENTION_KINDS:
            torch.testing.assert_close(attention(kind, q, k, v, block=block), reference)

            def step(kind=kind, q=q, k=k, v=v):
                attention(kind, q, k, v, block=block).sum().backward()

            t = time_op(step, repeats=repeats, warmup=1)
            rows.append({"seq": seq, "kind": kind, "seconds": t.median, "low": t.spread[0], "high": t.spread[1],
                         "saved_bytes": saved_bytes(kind, q, k, v, block=block),
                         "traffic_bytes": traffic_bytes(kind, batch=batch, heads=heads, seq=seq,
                                                        head_dim=head_dim)})
    return rows
