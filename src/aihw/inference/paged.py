"""Paged KV cache: fixed-size blocks from one pool and a block table per sequence (Kwon et al. 2023, vLLM).

A contiguous cache reserves, per sequence, room for the longest sequence it might become (``max_tokens``): a
request that stops early leaves the rest of its reservation empty (internal fragmentation), and reservations of
different sizes leave holes between them (external fragmentation). A paged cache cuts memory into blocks of
``block_size`` tokens; a sequence takes a new block only when its last one is full, so at most
``block_size - 1`` slots per sequence are ever empty, and any free block serves any sequence.

:class:`PagedKVCache` is an attention store for :meth:`aihw.inference.model.GenGPT.step`: it writes each new
key/value into the slot ``(block_table[seq][pos // block_size], pos % block_size)`` and gathers a sequence's keys
back through its block table, so attention reads the same numbers the contiguous cache holds (the tests check
they agree). :func:`waste_for_trace` replays a stream of requests through both allocators and measures the bytes
each leaves empty.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from aihw._validate import require_positive
from aihw.inference.model import GenConfig, allowed_mask, attend


class BlockAllocator:
    """A free list of ``num_blocks`` block ids; ``allocate`` raises when the pool is empty."""

    def __init__(self, num_blocks: int) -> None:
        require_positive("num_blocks", num_blocks, integer=True)
        self.num_blocks = num_blocks
        self.free: list[int] = list(range(num_blocks - 1, -1, -1))

    def allocate(self) -> int:
        if not self.free:
            raise MemoryError(f"KV cache out of blocks (all {self.num_blocks} in use)")
        return self.free.pop()

    def release(self, blocks: list[int]) -> None:
        self.free.extend(reversed(blocks))

    @property
    def used(self) -> int:
        return self.num_blocks - len(self.free)


class PagedKVCache:
    """Per layer, a pool of K and V blocks (num_blocks, kv_heads, block_size, head_dim) and block tables."""

    def __init__(self, cfg: GenConfig, num_blocks: int, block_size: int = 16, *,
                 dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu") -> None:
        require_positive("block_size", block_size, integer=True)
        self.cfg, self.block_size = cfg, block_size
        self.allocator = BlockAllocator(num_blocks)
        shape = (num_blocks, cfg.n_kv_heads, block_size, cfg.head_dim)
        self.k = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(cfg.depth)]
        self.v = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(cfg.depth)]
        self.tables: dict[int, list[int]] = {}
        self.lengths: dict[int, int] = {}
        self.batch: list[int] = []  # sequence ids of the rows of the next step, in order

    @property
    def bytes_per_block(self) -> int:
        return 2 * self.cfg.depth * self.k[0][0].numel() * self.k[0].element_size()

    def add(self, seq: int) -> None:
        if seq in self.tables:
            raise ValueError(f"sequence {seq} is already in the cache")
        self.tables[seq], self.lengths[seq] = [], 0

    def release(self, seq: int) -> None:
        self.allocator.release(self.tables.pop(seq))
        del self.lengths[seq]

    def bind(self, seqs: list[int]) -> PagedKVCache:
        """Set which sequence each row of the next ``step`` belongs to."""
        missing = [s for s in seqs if s not in self.tables]
        if missing:
            raise ValueError(f"sequences {missing} were not added to the cache")
        self.batch = list(seqs)
        return self

    def _reserve(self, seq: int, upto: int) -> None:
        table = self.tables[seq]
        while len(table) * self.block_size < upto:
            table.append(self.allocator.allocate())

    def attend(self, layer, q, k, v, positions):
        if len(self.batch) != q.shape[0]:
            raise ValueError(f"bind() {q.shape[0]} sequences before the step, got {len(self.batch)}")
        bs = self.block_size
        for row, seq in enumerate(self.batch):
            pos = positions[row]
            if layer == 0:
                self._reserve(seq, int(pos[-1]) + 1)
            table = torch.tensor(self.tables[seq], device=k.device)
            blocks, offsets = table[pos // bs], pos % bs
            self.k[layer][blocks, :, offsets] = k[row].transpose(0, 1)  # (T, Hkv, d) into the slots
            self.v[layer][blocks, :, offsets] = v[row].transpose(0, 1)
            if layer == len(self.k) - 1:
                self.lengths[seq] = max(self.lengths[seq], int(pos[-1]) + 1)
        keys, values, key_pos = self.gather(layer, [int(positions[r, -1]) + 1 for r in range(len(self.batch))])
        return attend(q, keys, values, allowed_mask(positions, key_pos, self.cfg.window))

    def gather(self, layer: int, lengths: list[int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Keys and values of the bound sequences through their block tables, padded to the longest:
        (B, Hkv, S, d) twice, and the key positions (B, S) with -1 for padding."""
        bs = self.block_size
        width = max(math.ceil(n / bs) for n in lengths) * bs
        pool_k, pool_v = self.k[layer], self.v[layer]
        b, hkv, d = len(lengths), pool_k.shape[1], pool_k.shape[3]
        keys = pool_k.new_zeros((b, hkv, width, d))
        values = pool_v.new_zeros((b, hkv, width, d))
        key_pos = torch.full((b, width), -1, dtype=torch.long, device=pool_k.device)
        for row, (seq, n) in enumerate(zip(self.batch, lengths, strict=True)):
            nblk = math.ceil(n / bs)
            table = torch.tensor(self.tables[seq][:nblk], device=pool_k.device)
            keys[row, :, :nblk * bs] = pool_k[table].transpose(0, 1).reshape(hkv, nblk * bs, d)
            values[row, :, :nblk * bs] = pool_v[table].transpose(0, 1).reshape(hkv, nblk * bs, d)
            key_pos[row, :n] = torch.arange(n, device=pool_k.device)
        return keys, values, key_pos


# --- memory waste for a stream of requests ------------------------------------------------------------------

@dataclass(frozen=True)
class WasteReport:
    """Peak and time-averaged KV bytes reserved vs holding real tokens, for the contiguous and paged schemes."""

    contiguous_reserved: float  # time-average bytes reserved
    paged_reserved: float
    used: float  # time-average bytes holding tokens (the same for both)
    contiguous_peak: float
    paged_peak: float

    @property
    def contiguous_waste(self) -> float:
        """Fraction of the reserved KV memory that holds no token (time-averaged)."""
        return 1 - self.used / self.contiguous_reserved

    @property
    def paged_waste(self) -> float:
        return 1 - self.used / self.paged_reserved


def waste_for_trace(requests: list[tuple[int, int, int]], *, max_tokens: int, block_size: int,
                    bytes_per_token: float) -> WasteReport:
    """Replay requests ``(arrival_step, prompt_tokens, output_tokens)``, all admitted on arrival, one token per
    step each; at every step count what a contiguous cache reserves (``max_tokens`` per live sequence, as
    :class:`~aihw.inference.model.KVCache` allocates) and what the paged allocator holds (whole blocks)."""
    require_positive("block_size", block_size, integer=True)
    if not requests:
        raise ValueError("the trace has no requests")
    for _arrival, prompt, out in requests:
        if prompt + out > max_tokens:
            raise ValueError(f"a request of {prompt}+{out} tokens exceeds max_tokens={max_tokens}")
    end = max(a + o for a, _, o in requests)
    alloc = BlockAllocator(sum(math.ceil((p + o) / block_size) for _, p, o in requests))
    tables: dict[int, list[int]] = {}
    cont = paged = used = 0.0
    cont_peak = paged_peak = 0.0
    for step in range(end + 1):
        live_tokens = 0
        live = 0
        for i, (a, p, o) in enumerate(requests):
            if a <= step < a + o:
                tokens = p + (step - a) + 1
                table = tables.setdefault(i, [])
                while len(table) * block_size < tokens:
                    table.append(alloc.allocate())
                live_tokens += tokens
                live += 1
            elif step == a + o and i in tables:
                alloc.release(tables.pop(i))
        c, g = live * max_tokens * bytes_per_token, alloc.used * block_size * bytes_per_token
        cont, paged, used = cont + c, paged + g, used + live_tokens * bytes_per_token
        cont_peak, paged_peak = max(cont_peak, c), max(paged_peak, g)
    return WasteReport(cont / (end + 1), paged / (end + 1), used / (end + 1), cont_peak, paged_peak)
