"""One description of how a training run is split over devices: data, tensor, pipeline, context, expert (stdlib).

Modelled on torchtitan's ``ParallelDims``: a frozen dataclass that validates itself once, so the memory
estimator, the planner, the memory-fit search and the tensor-/pipeline-parallel experiments all agree on what
a layout means and on what is wrong with a bad one.

Degrees (every one a positive integer):

* ``dp``: data-parallel replicas (ZeRO stage ``zero`` shards model state over them);
* ``tp``: tensor parallelism (Megatron: heads and the MLP's inner width split over ``tp`` devices);
* ``pp``: pipeline stages, each holding a contiguous run of layers (uneven splits allowed, see
  :func:`stage_layers`), optionally ``virtual_stages`` chunks per device (interleaved 1F1B);
* ``cp``: context parallelism (ring attention: the sequence split over ``cp`` devices);
* ``ep``: expert parallelism, carved out of the ``dp x cp`` devices (as Megatron-Core and torchtitan do), so
  it does not multiply the device count.

``dp * tp * pp * cp`` must equal the number of devices; an error prints the whole product.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from aihw._validate import require_positive


def divisors(n: int) -> list[int]:
    """Every divisor of ``n`` (ascending); O(sqrt n), so it stays fast for a million devices."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def _hint(values: list[int], limit: int = 12) -> str:
    shown = ", ".join(str(v) for v in values[:limit])
    return shown + (", ..." if len(values) > limit else "")


@dataclass(frozen=True)
class ParallelDims:
    """Degrees of a layout; ``world_size`` (optional) is checked against their product."""

    dp: int = 1
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    zero: int = 0  # ZeRO stage 0-3 over the dp replicas
    virtual_stages: int = 1  # chunks of layers per pipeline device (interleaved 1F1B when > 1)
    world_size: int | None = None

    def __post_init__(self) -> None:
        for name in ("dp", "tp", "pp", "cp", "ep", "virtual_stages"):
            require_positive(name, getattr(self, name), integer=True)
        if isinstance(self.zero, bool) or self.zero not in (0, 1, 2, 3):
            raise ValueError(f"zero stage must be 0, 1, 2 or 3, got {self.zero!r}")
        if self.world_size is not None:
            require_positive("world_size (devices)", self.world_size, integer=True)
            if self.devices != self.world_size:
                raise ValueError(f"dp x tp x pp x cp = {self.dp} x {self.tp} x {self.pp} x {self.cp} = "
                                 f"{self.devices}, but there are {self.world_size} devices; "
                                 f"{self._fill_hint(self.world_size)}")
        if (self.dp * self.cp) % self.ep:
            raise ValueError(f"ep={self.ep} must divide dp x cp = {self.dp * self.cp} (expert parallelism is "
                             f"carved out of the data- and context-parallel devices); possible: "
                             f"{_hint(divisors(self.dp * self.cp))}")
        if self.virtual_stages > 1 and self.pp == 1:
            raise ValueError(f"virtual_stages={self.virtual_stages} needs pp > 1 (interleaving splits each "
                             "pipeline device's layers into chunks)")

    def _fill_hint(self, n: int) -> str:
        other = self.tp * self.pp * self.cp
        if n % other == 0:
            return f"with tp={self.tp}, pp={self.pp}, cp={self.cp} use dp={n // other}"
        return (f"tp x pp x cp = {other} does not divide {n}; divisors of {n}: {_hint(divisors(n))}")

    @property
    def devices(self) -> int:
        return self.dp * self.tp * self.pp * self.cp

    @property
    def label(self) -> str:
        parts = [f"DP{self.dp}", f"TP{self.tp}", f"PP{self.pp}"]
        parts += [f"CP{self.cp}"] if self.cp > 1 else []
        parts += [f"EP{self.ep}"] if self.ep > 1 else []
        text = " x ".join(parts)
        if self.virtual_stages > 1:
            text += f" (v={self.virtual_stages})"
        return text + (f", ZeRO-{self.zero}" if self.zero else "")

    def validate_model(self, model: Any, *, seq: int | None = None) -> ParallelDims:
        """Check the degrees against a model shape (and a sequence length); ValueError says what would work.

        ``model`` is an :class:`aihw.transformer.shapes.ModelShape` (duck-typed so this module stays import-free).
        """
        m = model
        if m.heads % self.tp or m.hidden % self.tp:
            raise ValueError(f"tp={self.tp} must divide the {m.heads} attention heads and the hidden size "
                             f"{m.hidden} of {m.name}; possible: {_hint(divisors(math.gcd(m.heads, m.hidden)))}")
        kv = m.n_kv_heads
        if not tp_fits_kv_heads(kv, self.tp):
            ok = [d for d in divisors(m.heads) if tp_fits_kv_heads(kv, d)]
            raise ValueError(f"tp={self.tp} and kv_heads={kv} of {m.name} must divide one another; "
                             f"possible: {_hint(ok)}")
        if m.ffn_dim % self.tp:
            raise ValueError(f"tp={self.tp} must divide the feed-forward width {m.ffn_dim} of {m.name}")
        chunks = self.pp * self.virtual_stages
        if chunks > m.layers:
            if self.virtual_stages == 1:
                raise ValueError(f"pp={self.pp} stages exceed the {m.layers} layers of {m.name}: every stage needs "
                                 f"a layer; at most {m.layers} (stages need not divide the layers)")
            raise ValueError(f"pp x virtual_stages = {self.pp} x {self.virtual_stages} = {chunks} pipeline "
                             f"chunks exceed the {m.layers} layers of {m.name}; at most {m.layers} chunks")
        experts = getattr(m, "experts", 0) or 0
        if self.ep > 1 and experts == 0:
            raise ValueError(f"ep={self.ep} needs a mixture-of-experts model; {m.name} is dense (experts = 0)")
        if experts and experts % self.ep:
            raise ValueError(f"ep={self.ep} must divide the {experts} experts of {m.name}; "
                             f"possible: {_hint(divisors(experts))}")
        if seq is not None:
            require_positive("seq", seq, integer=True)
            if seq % self.cp:
                raise ValueError(f"cp={self.cp} must divide the sequence of {seq} tokens (each context-parallel "
                                 f"rank holds seq / cp tokens); possible: {_hint(divisors(seq))}")
        return self


def tp_fits_kv_heads(kv_heads: int, tp: int) -> bool:
    """Whether ``tp`` tensor-parallel ranks can share ``kv_heads`` key/value heads: tp divides them (each rank
    holds kv_heads / tp) or they divide tp (each rank holds one, replicated tp / kv_heads times)."""
    return kv_heads % tp == 0 or tp % kv_heads == 0


def kv_heads_per_device(kv_heads: int, tp: int) -> int:
    """Key/value heads each of ``tp`` tensor-parallel ranks holds: ``kv_heads / tp``, or 1 when tp exceeds them.

    With more ranks than KV heads (grouped-query attention at high tp, e.g. 8 KV heads on 16 chips), each head is
    replicated on tp / kv_heads ranks, as vLLM and TensorRT-LLM do, so the KV cache per device stops shrinking at
    one head. The memory estimator, the serving model and the planner all apply this rule.
    """
    require_positive("kv_heads", kv_heads, integer=True)
    require_positive("tp", tp, integer=True)
    if not tp_fits_kv_heads(kv_heads, tp):
        raise ValueError(f"tp={tp} and kv_heads={kv_heads} must divide one another")
    return max(1, kv_heads // tp)


def stage_layers(layers: int, pp: int, *, virtual_stages: int = 1, ends_weight: float = 0.0) -> tuple[int, ...]:
    """Layers per pipeline chunk (``pp * virtual_stages`` chunks, in pipeline order), as real runs split them.

    Even when ``layers`` divides; otherwise the remainder goes to the middle chunks, so the first and last
    chunks (which also hold the embedding and the output head) get fewer. ``ends_weight`` > 0 (the embedding
    or head's cost in layers) moves up to that many layers off each end chunk, as Llama 3 405B did
    (126 layers on 16 stages: one layer fewer on the first and last stage; Dubey et al. 2024, sec. 3.3.2).
    """
    chunks = require_positive("pp", pp, integer=True) * require_positive("virtual_stages", virtual_stages,
                                                                         integer=True)
    require_positive("layers", layers, integer=True)
    if chunks > layers:
        raise ValueError(f"{chunks} pipeline chunks for {layers} layers: every chunk needs at least one layer")
    base, extra = divmod(layers, chunks)
    sizes = [base] * chunks
    order = list(range(1, chunks - 1)) + [0, chunks - 1] if chunks > 2 else list(range(chunks))
    for i in order[:extra]:
        sizes[i] += 1
    move = int(ends_weight)
    if chunks > 2 and move > 0:
        for end in (0, chunks - 1):
            for _ in range(move):
                if sizes[end] <= 1:
                    break
                j = min(range(1, chunks - 1), key=lambda k: sizes[k])
                if sizes[j] + 1 > max(sizes):  # would make the busiest chunk busier: stop
                    break
                sizes[end] -= 1
                sizes[j] += 1
    return tuple(sizes)
