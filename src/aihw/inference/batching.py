"""Static vs continuous batching: one real serving loop over the small model, two admission policies.

Every step of the loop (Yu et al. 2022, Orca's iteration-level scheduling):

1. **admit** waiting requests that have arrived, up to ``max_batch`` running: *continuous* batching admits
   whenever a slot is free; *static* batching admits a new batch only when the previous one has finished entirely,
   so short requests wait for the longest one in their batch;
2. **prefill** each newly admitted request (its whole prompt in one pass) and take its first token;
3. **decode** one token for every running request in one batched step through the paged KV cache;
4. **retire** finished requests and give their blocks back.

Tokens are greedy, so each request's output must equal what the model produces for that request alone
(:func:`aihw.inference.model.generate`); the tests check it. Times are wall-clock on this machine; arrivals are in
steps of the loop, so both policies see the same trace.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Literal, get_args

import torch

from aihw._validate import require_choice, require_positive
from aihw.inference.model import GenGPT
from aihw.inference.paged import PagedKVCache

Policy = Literal["static", "continuous"]
POLICIES: tuple[str, ...] = get_args(Policy)


@dataclass(frozen=True)
class Request:
    """One request: prompt token ids, how many tokens to generate, and the loop step at which it arrives."""

    rid: int
    prompt: tuple[int, ...]
    new_tokens: int
    arrival: int = 0

    def __post_init__(self) -> None:
        if not self.prompt:
            raise ValueError(f"request {self.rid}: empty prompt")
        require_positive("new_tokens", self.new_tokens, integer=True)
        if self.arrival < 0:
            raise ValueError(f"request {self.rid}: arrival must be >= 0, got {self.arrival}")


@dataclass
class Finished:
    rid: int
    tokens: list[int]
    arrival_s: float  # wall time the request arrived (seconds from the start of the run)
    first_token_s: float
    done_s: float
    arrival_step: int  # loop step of arrival; steps are the noise-free clock
    done_step: int

    @property
    def latency_steps(self) -> int:
        return self.done_step - self.arrival_step + 1

    @property
    def latency_s(self) -> float:
        return self.done_s - self.arrival_s

    @property
    def ttft_s(self) -> float:
        return self.first_token_s - self.arrival_s


@dataclass
class RunResult:
    policy: str
    finished: dict[int, Finished] = field(default_factory=dict)
    seconds: float = 0.0
    steps: int = 0
    decode_rows: int = 0  # request-rows processed by decode steps (static batching also decodes finished rows)

    @property
    def tokens(self) -> int:
        return sum(len(f.tokens) for f in self.finished.values())

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds

    @property
    def mean_latency_s(self) -> float:
        return statistics.fmean(f.latency_s for f in self.finished.values())

    @property
    def p90_latency_s(self) -> float:
        lat = sorted(f.latency_s for f in self.finished.values())
        return lat[min(len(lat) - 1, math.ceil(0.9 * len(lat)) - 1)]

    @property
    def mean_latency_steps(self) -> float:
        return statistics.fmean(f.latency_steps for f in self.finished.values())

    @property
    def mean_ttft_s(self) -> float:
        return statistics.fmean(f.ttft_s for f in self.finished.values())


@torch.no_grad()
def serve(model: GenGPT, requests: list[Request], *, policy: Policy = "continuous", max_batch: int = 8,
          block_size: int = 16) -> RunResult:
    """Run the trace through the serving loop with ``policy``; returns every request's tokens and timings."""
    require_choice("policy", policy, POLICIES)
    require_positive("max_batch", max_batch, integer=True)
    if len({r.rid for r in requests}) != len(requests):
        raise ValueError("request ids must be unique")
    longest = max(len(r.prompt) + r.new_tokens for r in requests)
    if longest > model.cfg.seq_len:
        raise ValueError(f"a request needs {longest} positions; the model has {model.cfg.seq_len}")
    p = next(model.parameters())
    blocks = max_batch * math.ceil(longest / block_size) + max_batch  # enough for a full batch of the longest
    cache = PagedKVCache(model.cfg, blocks, block_size, dtype=p.dtype, device=p.device)
    waiting = sorted(requests, key=lambda r: (r.arrival, r.rid))
    running: dict[int, list[int]] = {}  # rid -> generated tokens
    info = {r.rid: r for r in requests}
    arrived_at: dict[int, float] = {}
    first: dict[int, float] = {}
    result = RunResult(policy)
    start = time.perf_counter()
    step = 0
    while waiting or running:
        now = time.perf_counter() - start
        for r in waiting:
            if r.arrival <= step and r.rid not in arrived_at:
                arrived_at[r.rid] = now
        if not running and waiting and waiting[0].arrival > step:
            step = waiting[0].arrival  # idle: jump to the next arrival
            continue
        # 1. admit
        may_admit = policy == "continuous" or not running
        admitted: list[Request] = []
        while may_admit and waiting and waiting[0].arrival <= step and len(running) + len(admitted) < max_batch:
            admitted.append(waiting.pop(0))
        # 2. prefill each new request alone (its prompt in one pass) and take its first token
        for r in admitted:
            arrived_at.setdefault(r.rid, now)
            cache.add(r.rid)
            ids = torch.tensor([r.prompt], device=p.device)
            logits = model.step(ids, torch.arange(len(r.prompt), device=p.device)[None], cache.bind([r.rid]))
            running[r.rid] = [int(logits[0, -1].argmax())]
            first[r.rid] = time.perf_counter() - start
        # 3. decode one token for every running request that still needs one (static: all rows run)
        rows = [rid for rid, out in running.items() if len(out) < info[rid].new_tokens
                or (policy == "static" and _batch_unfinished(running, info))]
        rows = [rid for rid in rows if len(info[rid].prompt) + len(running[rid]) < model.cfg.seq_len]
        if rows:
            last = torch.tensor([[running[rid][-1]] for rid in rows], device=p.device)
            pos = torch.tensor([[len(info[rid].prompt) + len(running[rid]) - 1] for rid in rows], device=p.device)
            logits = model.step(last, pos, cache.bind(rows))
            for i, rid in enumerate(rows):
                running[rid].append(int(logits[i, -1].argmax()))
            result.decode_rows += len(rows)
        # 4. retire
        now = time.perf_counter() - start
        done = [rid for rid, out in running.items() if len(out) >= info[rid].new_tokens]
        if policy == "static" and _batch_unfinished(running, info):
            done = []  # a static batch leaves together
        for rid in done:
            result.finished[rid] = Finished(rid, running.pop(rid)[:info[rid].new_tokens], arrived_at[rid],
                                            first[rid], now, info[rid].arrival, step)
            cache.release(rid)
        step += 1
    result.seconds, result.steps = time.perf_counter() - start, step
    return result


def _batch_unfinished(running: dict[int, list[int]], info: dict[int, Request]) -> bool:
    return any(len(out) < info[rid].new_tokens for rid, out in running.items())


def make_trace(n: int, *, prompt_range: tuple[int, int] = (4, 24), new_range: tuple[int, int] = (4, 48),
               arrival_every: float = 0.0, vocab: int = 256, seed: int = 0) -> list[Request]:
    """``n`` requests with mixed prompt and output lengths (uniform in the ranges), arriving every
    ``arrival_every`` steps on average (0: all at once)."""
    require_positive("n", n, integer=True)
    g = torch.Generator().manual_seed(seed)

    def uniform(lo: int, hi: int) -> int:
        return int(torch.randint(lo, hi + 1, (1,), generator=g))

    out = []
    for i in range(n):
        prompt = tuple(int(t) for t in torch.randint(0, vocab, (uniform(*prompt_range),), generator=g))
        out.append(Request(i, prompt, uniform(*new_range), arrival=int(i * arrival_every)))
    return out
